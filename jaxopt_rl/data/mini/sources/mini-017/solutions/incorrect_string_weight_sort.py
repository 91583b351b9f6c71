# BUG: sorts cables by the weight's text (bytes), so "10" comes before "9"; right only when all weights have equal length.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    edges = [(data[4 + 3 * i], int(data[2 + 3 * i]), int(data[3 + 3 * i])) for i in range(m)]
    edges.sort()
    parent = list(range(n + 1))

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    total, joined = 0, 0
    for w, u, v in edges:
        ru, rv = find(u), find(v)
        if ru != rv:
            parent[ru] = rv
            total += int(w)
            joined += 1
    print(total if joined == n - 1 else "IMPOSSIBLE")


main()
