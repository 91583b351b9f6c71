# BUG: the "largest label last on the reversed graph" trick puts small labels as early as possible, which is a different order from the lexicographically smallest one.
import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    pred = [[] for _ in range(n + 1)]
    outdeg = [0] * (n + 1)
    for i in range(m):
        a, b = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        pred[b].append(a)
        outdeg[a] += 1
    ready = [-v for v in range(1, n + 1) if outdeg[v] == 0]
    heapq.heapify(ready)
    rev = []
    while ready:
        v = -heapq.heappop(ready)
        rev.append(v)
        for u in pred[v]:
            outdeg[u] -= 1
            if outdeg[u] == 0:
                heapq.heappush(ready, -u)
    print("IMPOSSIBLE" if len(rev) < n else " ".join(map(str, reversed(rev))))


main()
