# O(n) with deep recursion: the same three diameter sweeps done by a recursive DFS on a large thread stack.
import sys
import threading


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    adj = [[] for _ in range(n + 1)]
    for i in range(n - 1):
        u, v, w = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        adj[u].append((v, w))
        adj[v].append((u, w))

    def sweep(source):
        dist = [0] * (n + 1)

        def dfs(u, parent):
            for v, w in adj[u]:
                if v != parent:
                    dist[v] = dist[u] + w
                    dfs(v, u)

        dfs(source, 0)
        return dist

    d1 = sweep(1)
    a = max(range(1, n + 1), key=d1.__getitem__)
    da = sweep(a)
    b = max(range(1, n + 1), key=da.__getitem__)
    db = sweep(b)
    print(" ".join(str(max(da[v], db[v])) for v in range(1, n + 1)))


sys.setrecursionlimit(1 << 20)
threading.stack_size(256 * 1024 * 1024)
thread = threading.Thread(target=main)
thread.start()
thread.join()
