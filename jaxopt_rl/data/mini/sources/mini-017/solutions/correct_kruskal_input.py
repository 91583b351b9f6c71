# O(m log m): Kruskal with union-find, but reads every cable with input() and sorts tuples (slow I/O).
n, m = map(int, input().split())
edges = []
for _ in range(m):
    u, v, w = map(int, input().split())
    edges.append((w, u, v))
edges.sort()
parent = list(range(n + 1))


def find(x):
    root = x
    while parent[root] != root:
        root = parent[root]
    while parent[x] != root:
        parent[x], x = root, parent[x]
    return root


total = 0
joined = 0
for w, u, v in edges:
    ru = find(u)
    rv = find(v)
    if ru != rv:
        parent[ru] = rv
        total += w
        joined += 1
print(total if joined == n - 1 else "IMPOSSIBLE")
