# O(n + m) with slow I/O and hashing: reads each channel with input(), dict-of-lists graph, Kahn with a deque.
from collections import deque

MOD = 10**9 + 7
n, m = map(int, input().split())
succ = {}
indeg = {v: 0 for v in range(1, n + 1)}
for _ in range(m):
    u, v = map(int, input().split())
    succ.setdefault(u, []).append(v)
    indeg[v] += 1
ways = {v: 0 for v in range(1, n + 1)}
ways[1] = 1
queue = deque(v for v in range(1, n + 1) if indeg[v] == 0)
while queue:
    u = queue.popleft()
    for v in succ.get(u, ()):
        ways[v] = (ways[v] + ways[u]) % MOD
        indeg[v] -= 1
        if indeg[v] == 0:
            queue.append(v)
print(ways[n])
