# O(r * m), r = rounds until nothing improves (at most n): Bellman-Ford sweeping the whole road list each round.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    us = list(map(int, data[2:2 + 3 * m:3]))
    vs = list(map(int, data[3:3 + 3 * m:3]))
    ws = list(map(int, data[4:4 + 3 * m:3]))
    inf = float("inf")
    dist = [inf] * (n + 1)
    dist[1] = 0
    for _ in range(n):
        changed = False
        for u, v, w in zip(us, vs, ws):
            nd = dist[u] + w
            if nd < dist[v]:
                dist[v] = nd
                changed = True
        if not changed:
            break
    print(" ".join(str(x) if x != inf else "-1" for x in dist[1:]))


main()
