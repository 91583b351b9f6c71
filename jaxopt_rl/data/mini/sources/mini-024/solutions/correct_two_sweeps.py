# O(n): the farthest node from any vertex is an end of a diameter; three iterative traversals give both ends' distances.
import sys


def read_tree():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    adj = [[] for _ in range(n + 1)]
    for i in range(n - 1):
        u, v, w = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        adj[u].append((v, w))
        adj[v].append((u, w))
    return n, adj


def distances(n, adj, source):
    dist = [-1] * (n + 1)
    dist[source] = 0
    stack = [source]
    while stack:
        u = stack.pop()
        du = dist[u]
        for v, w in adj[u]:
            if dist[v] < 0:
                dist[v] = du + w
                stack.append(v)
    return dist


def main():
    n, adj = read_tree()
    d1 = distances(n, adj, 1)
    a = max(range(1, n + 1), key=d1.__getitem__)
    da = distances(n, adj, a)
    b = max(range(1, n + 1), key=da.__getitem__)
    db = distances(n, adj, b)
    print(" ".join(map(str, map(max, da[1:], db[1:]))))


main()
