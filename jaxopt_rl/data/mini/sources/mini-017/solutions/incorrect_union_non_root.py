# BUG: union links the endpoint u itself (parent[u] = root of v) instead of u's root, which can detach part of u's component.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    edges = sorted(
        (int(data[4 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])) for i in range(m)
    )
    parent = list(range(n + 1))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    total, joined = 0, 0
    for w, u, v in edges:
        if find(u) != find(v):
            parent[u] = find(v)
            total += w
            joined += 1
    print(total if joined == n - 1 else "IMPOSSIBLE")


main()
