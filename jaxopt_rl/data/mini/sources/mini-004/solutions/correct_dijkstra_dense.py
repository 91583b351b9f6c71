# O(n^2 + m): array Dijkstra without a heap; each step picks the closest unfinished depot with min() + index() over all n.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    adj = [[] for _ in range(n)]
    for j in range(m):
        u, v, w = int(data[2 + 3 * j]) - 1, int(data[3 + 3 * j]) - 1, int(data[4 + 3 * j])
        adj[u].append((v, w))
    inf = float("inf")
    tentative = [inf] * n  # finished depots are reset to inf so min() skips them
    tentative[0] = 0
    final = [-1] * n
    for _ in range(n):
        d = min(tentative)
        if d == inf:
            break
        u = tentative.index(d)
        final[u] = d
        tentative[u] = inf
        for v, w in adj[u]:
            if final[v] < 0 and d + w < tentative[v]:
                tentative[v] = d + w
    print(" ".join(map(str, final)))


main()
