# O(m log m + m * h): Kruskal with a union-find that neither compresses paths nor balances trees (h = tree height).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    edges = []
    for i in range(m):
        edges.append((int(data[4 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])))
    edges.sort(key=lambda e: e[0])
    parent = list(range(n + 1))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    total, joined = 0, 0
    for w, u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            total += w
            joined += 1
    print(total if joined == n - 1 else "IMPOSSIBLE")


main()
