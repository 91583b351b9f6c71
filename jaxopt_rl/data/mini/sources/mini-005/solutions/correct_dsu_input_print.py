# O((n + q) * alpha(n)): the iterative union-find, but input() per event and print() per answer (slow line-by-line I/O).
def main():
    n, q = map(int, input().split())
    parent = list(range(n + 1))
    size = [1] * (n + 1)

    def find(x):
        root = x
        while parent[root] != root:
            root = parent[root]
        while parent[x] != root:
            parent[x], x = root, parent[x]
        return root

    for _ in range(q):
        kind, a, b = input().split()
        ra, rb = find(int(a)), find(int(b))
        if kind == "Q":
            print("YES" if ra == rb else "NO")
        elif ra != rb:
            if size[ra] < size[rb]:
                ra, rb = rb, ra
            parent[rb] = ra
            size[ra] += size[rb]


main()
