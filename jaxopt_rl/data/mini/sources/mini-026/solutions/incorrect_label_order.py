# BUG: assumes every channel goes from a smaller to a larger junction number and runs the DP in label order.
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
    n, succ, _ = read_graph()
    ways = [0] * (n + 1)
    ways[1] = 1
    for u in range(1, n + 1):
        for v in succ[u]:
            ways[v] = (ways[v] + ways[u]) % MOD
    print(ways[n])


main()
