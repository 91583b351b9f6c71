# O(n + m) with deep recursion: memoised DFS counting routes from each junction to n, on a big thread stack.
import sys
import threading

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    succ = [[] for _ in range(n + 1)]
    for i in range(m):
        succ[int(data[2 + 2 * i])].append(int(data[3 + 2 * i]))
    memo = [-1] * (n + 1)

    def routes(u):
        if u == n:
            return 1
        if memo[u] >= 0:
            return memo[u]
        total = 0
        for v in succ[u]:
            total += routes(v)
        memo[u] = total % MOD
        return memo[u]

    print(routes(1))


sys.setrecursionlimit(1 << 20)
threading.stack_size(256 * 1024 * 1024)
thread = threading.Thread(target=main)
thread.start()
thread.join()
