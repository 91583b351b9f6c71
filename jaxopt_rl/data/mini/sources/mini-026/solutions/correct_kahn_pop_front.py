# O(n + m + sum of queue lengths): Kahn's algorithm with list.pop(0) as the queue (each pop shifts the whole list).
import sys

MOD = 10**9 + 7


def read_graph():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    succ = [[] for _ in range(n + 1)]
    indeg = [0] * (n + 1)
    for i in range(m):
        u, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        succ[u].append(v)
        indeg[v] += 1
    return n, succ, indeg


def main():
    n, succ, indeg = read_graph()
    ways = [0] * (n + 1)
    ways[1] = 1
    queue = [v for v in range(1, n + 1) if indeg[v] == 0]
    while queue:
        u = queue.pop(0)
        for v in succ[u]:
            ways[v] = (ways[v] + ways[u]) % MOD
            indeg[v] -= 1
            if indeg[v] == 0:
                queue.append(v)
    print(ways[n])


main()
