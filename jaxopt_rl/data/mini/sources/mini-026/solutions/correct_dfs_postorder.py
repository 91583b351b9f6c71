# O(n + m): iterative DFS post-order from junction 1 (reverse topological order), then backward DP of routes to n.
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
    visited = [False] * (n + 1)
    post = []
    stack = [(1, 0)]
    visited[1] = True
    while stack:
        u, i = stack.pop()
        if i < len(succ[u]):
            stack.append((u, i + 1))
            v = succ[u][i]
            if not visited[v]:
                visited[v] = True
                stack.append((v, 0))
        else:
            post.append(u)
    to_end = [0] * (n + 1)
    to_end[n] = 1
    for u in post:
        if u != n:
            to_end[u] = sum(to_end[v] for v in succ[u]) % MOD
    print(to_end[1])


main()
