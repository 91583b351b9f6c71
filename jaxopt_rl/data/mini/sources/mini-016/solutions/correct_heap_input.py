# O((n + m) log n): Kahn's algorithm with a min-heap, but reads each edge with input() (slow I/O).
import heapq

n, m = map(int, input().split())
succ = [[] for _ in range(n + 1)]
indeg = [0] * (n + 1)
for _ in range(m):
    a, b = map(int, input().split())
    succ[a].append(b)
    indeg[b] += 1
ready = []
for v in range(1, n + 1):
    if indeg[v] == 0:
        heapq.heappush(ready, v)
order = []
while ready:
    v = heapq.heappop(ready)
    order.append(v)
    for w in succ[v]:
        indeg[w] -= 1
        if indeg[w] == 0:
            heapq.heappush(ready, w)
if len(order) < n:
    print("IMPOSSIBLE")
else:
    print(" ".join(str(v) for v in order))
