# O(m log m): heap Dijkstra over a dict-of-lists adjacency, reading every road with input() (slow line-by-line I/O).
import heapq


def main():
    n, m = map(int, input().split())
    adj = {}
    for _ in range(m):
        u, v, w = map(int, input().split())
        adj.setdefault(u, []).append((v, w))
    dist = {1: 0}
    done = set()
    heap = [(0, 1)]
    while heap:
        d, u = heapq.heappop(heap)
        if u in done:
            continue
        done.add(u)
        for v, w in adj.get(u, ()):
            nd = d + w
            if v not in dist or nd < dist[v]:
                dist[v] = nd
                heapq.heappush(heap, (nd, v))
    print(" ".join(str(dist.get(v, -1)) for v in range(1, n + 1)))


main()
