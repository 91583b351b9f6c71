# BUG: rerooting keeps only the best downward child, so a node whose parent's best path runs through it gets a too-short upward value.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    adj = [[] for _ in range(n + 1)]
    for i in range(n - 1):
        u, v, w = int(data[1 + 3 * i]), int(data[2 + 3 * i]), int(data[3 + 3 * i])
        adj[u].append((v, w))
        adj[v].append((u, w))
    parent = [0] * (n + 1)
    parent_w = [0] * (n + 1)
    order = [1]
    parent[1] = -1
    for u in order:
        for v, w in adj[u]:
            if v != parent[u]:
                parent[v] = u
                parent_w[v] = w
                order.append(v)
    down = [0] * (n + 1)
    best_child = [0] * (n + 1)
    for v in reversed(order[1:]):
        p, cand = parent[v], down[v] + parent_w[v]
        if cand > down[p]:
            down[p], best_child[p] = cand, v
    up = [0] * (n + 1)
    for v in order[1:]:
        p = parent[v]
        via_sibling = 0 if best_child[p] == v else down[p]
        up[v] = parent_w[v] + max(up[p], via_sibling)
    print(" ".join(str(max(down[v], up[v])) for v in range(1, n + 1)))


main()
