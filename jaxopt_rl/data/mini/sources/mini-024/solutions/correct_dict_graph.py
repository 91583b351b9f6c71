# O(n) with hashing overhead: adjacency as dict of dicts and distances in dicts, three diameter sweeps.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    adj = {v: {} for v in range(1, n + 1)}
    for i in range(n - 1):
        u, v, w = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        adj[u][v] = w
        adj[v][u] = w

    def sweep(source):
        dist = {source: 0}
        frontier = [source]
        while frontier:
            nxt = []
            for u in frontier:
                for v, w in adj[u].items():
                    if v not in dist:
                        dist[v] = dist[u] + w
                        nxt.append(v)
            frontier = nxt
        return dist

    d1 = sweep(1)
    a = max(d1, key=lambda v: (d1[v], -v))
    da = sweep(a)
    b = max(da, key=lambda v: (da[v], -v))
    db = sweep(b)
    print(" ".join(str(max(da[v], db[v])) for v in range(1, n + 1)))


main()
