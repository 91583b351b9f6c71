# O(m log m + n^2): Kruskal where each merge relabels the whole component array in a Python loop.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    edges = sorted(
        (int(data[4 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])) for i in range(m)
    )
    comp = list(range(n + 1))
    total, joined = 0, 0
    for w, u, v in edges:
        cu, cv = comp[u], comp[v]
        if cu == cv:
            continue
        for x in range(1, n + 1):
            if comp[x] == cv:
                comp[x] = cu
        total += w
        joined += 1
        if joined == n - 1:
            break
    print(total if joined == n - 1 else "IMPOSSIBLE")


main()
