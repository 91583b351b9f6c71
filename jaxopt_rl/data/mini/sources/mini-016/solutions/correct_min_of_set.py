# O(n * w + m), w = number of simultaneously ready jobs: ready jobs in a set, min() over it every step.
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
    ready = {v for v in range(1, n + 1) if indeg[v] == 0}
    order = []
    while ready:
        v = min(ready)
        ready.remove(v)
        order.append(v)
        for w in succ[v]:
            indeg[w] -= 1
            if indeg[w] == 0:
                ready.add(w)
    print("IMPOSSIBLE" if len(order) < n else " ".join(map(str, order)))


main()
