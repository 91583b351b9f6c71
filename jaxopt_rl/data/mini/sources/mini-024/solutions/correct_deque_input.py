# O(n): diameter sweeps with a deque-based BFS, reading every edge with input() and printing every answer with its own print() call.
from collections import deque

n = int(input())
adj = [[] for _ in range(n + 1)]
for _ in range(n - 1):
    u, v, w = map(int, input().split())
    adj[u].append((v, w))
    adj[v].append((u, w))


def sweep(source):
    dist = [None] * (n + 1)
    dist[source] = 0
    queue = deque([source])
    while queue:
        u = queue.popleft()
        for v, w in adj[u]:
            if dist[v] is None:
                dist[v] = dist[u] + w
                queue.append(v)
    return dist


d1 = sweep(1)
a = 1
for v in range(1, n + 1):
    if d1[v] > d1[a]:
        a = v
da = sweep(a)
b = a
for v in range(1, n + 1):
    if da[v] > da[b]:
        b = v
db = sweep(b)
for v in range(1, n):
    print(max(da[v], db[v]), end=" ")
print(max(da[n], db[n]))
