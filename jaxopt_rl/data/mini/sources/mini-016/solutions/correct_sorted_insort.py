# O((n + m) log n + n^2 memmove): ready jobs kept in a descending sorted list (bisect.insort), pop the smallest from the end.
import bisect
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    succ = [[] for _ in range(n + 1)]
    indeg = [0] * (n + 1)
    for i in range(m):
        a, b = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        succ[a].append(b)
        indeg[b] += 1
    # Store negated labels so the smallest label sits at the end and pop() is cheap.
    ready = sorted(-v for v in range(1, n + 1) if indeg[v] == 0)
    order = []
    while ready:
        v = -ready.pop()
        order.append(v)
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                bisect.insort(ready, -w)
    print("IMPOSSIBLE" if len(order) < n else " ".join(map(str, order)))


main()
