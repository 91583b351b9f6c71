# BUG: Kahn's algorithm with a FIFO queue yields a valid order, but not the lexicographically smallest one.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    succ = [[] for _ in range(n + 1)]
    indeg = [0] * (n + 1)
    for i in range(m):
        a, b = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        succ[a].append(b)
        indeg[b] += 1
    queue = deque(v for v in range(1, n + 1) if indeg[v] == 0)
    order = []
    while queue:
        v = queue.popleft()
        order.append(v)
        for w in sorted(succ[v]):
            indeg[w] -= 1
            if indeg[w] == 0:
                queue.append(w)
    print("IMPOSSIBLE" if len(order) < n else " ".join(map(str, order)))


main()
