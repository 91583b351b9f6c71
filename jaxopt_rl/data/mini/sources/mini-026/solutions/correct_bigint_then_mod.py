# O(n + m) big-integer additions: exact route counts (they grow to thousands of digits), modulo taken only at the end.
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
    for u in order:  # the list grows while we iterate: a queue without pops
        wu = ways[u]
        for v in succ[u]:
            ways[v] += wu
            indeg[v] -= 1
            if indeg[v] == 0:
                order.append(v)
    print(ways[n] % MOD)


main()
