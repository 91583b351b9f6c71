# O(n + m): Kahn's topological order (list used as a queue with a head index) and forward path-count DP.
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
    order = [v for v in range(1, n + 1) if indeg[v] == 0]
    head = 0
    while head < len(order):
        u = order[head]
        head += 1
        wu = ways[u]
        for v in succ[u]:
            ways[v] = (ways[v] + wu) % MOD
            indeg[v] -= 1
            if indeg[v] == 0:
                order.append(v)
    print(ways[n])


main()
