# BUG: finds the first diameter end by hop count (unweighted BFS), which need not be an end of the weighted diameter.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    adj = [[] for _ in range(n + 1)]
    for i in range(n - 1):
        u, v, w = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        adj[u].append((v, w))
        adj[v].append((u, w))

    def sweep(source, weighted):
        dist = [-1] * (n + 1)
        dist[source] = 0
        queue = deque([source])
        while queue:
            u = queue.popleft()
            for v, w in adj[u]:
                if dist[v] < 0:
                    dist[v] = dist[u] + (w if weighted else 1)
                    queue.append(v)
        return dist

    hops = sweep(1, False)
    a = max(range(1, n + 1), key=hops.__getitem__)
    da = sweep(a, True)
    b = max(range(1, n + 1), key=da.__getitem__)
    db = sweep(b, True)
    print(" ".join(str(max(x, y)) for x, y in zip(da[1:], db[1:])))


main()
