# O(n^2 + m): Prim on a dense n x n cost matrix, scanning all towns for the closest one each step.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    inf = float("inf")
    cost = [[inf] * (n + 1) for _ in range(n + 1)]
    for i in range(m):
        u, v, w = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
        if u != v and w < cost[u][v]:
            cost[u][v] = w
            cost[v][u] = w
    dist = [inf] * (n + 1)
    used = [False] * (n + 1)
    dist[1] = 0
    total = 0
    for _ in range(n):
        best, v = inf, -1
        for x in range(1, n + 1):
            if not used[x] and dist[x] < best:
                best, v = dist[x], x
        if v == -1:
            print("IMPOSSIBLE")
            return
        used[v] = True
        total += best
        row = cost[v]
        for x in range(1, n + 1):
            if row[x] < dist[x]:
                dist[x] = row[x]
    print(total)


main()
