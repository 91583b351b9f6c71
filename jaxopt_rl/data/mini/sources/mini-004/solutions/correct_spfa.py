# O(k * m), k = how often a depot is re-queued (worst case n): SPFA, queue-based Bellman-Ford with a deque.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    adj = [[] for _ in range(n + 1)]
    for j in range(m):
        u, v, w = int(data[2 + 3 * j]), int(data[3 + 3 * j]), int(data[4 + 3 * j])
        adj[u].append((v, w))
    inf = float("inf")
    dist = [inf] * (n + 1)
    dist[1] = 0
    queued = [False] * (n + 1)
    queue = deque([1])
    queued[1] = True
    while queue:
        u = queue.popleft()
        queued[u] = False
        du = dist[u]
        for v, w in adj[u]:
            if du + w < dist[v]:
                dist[v] = du + w
                if not queued[v]:
                    queued[v] = True
                    queue.append(v)
    print(" ".join(str(x) if x != inf else "-1" for x in dist[1:]))


main()
