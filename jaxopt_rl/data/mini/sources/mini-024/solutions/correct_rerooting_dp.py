# O(n): rerooting DP — best downward path per node (top two children) then best upward path, in BFS order.
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
    down1 = [0] * (n + 1)  # longest path going down
    down2 = [0] * (n + 1)  # second longest, through a different child
    best_child = [0] * (n + 1)
    for v in reversed(order[1:]):
        p, cand = parent[v], down1[v] + parent_w[v]
        if cand > down1[p]:
            down2[p], down1[p], best_child[p] = down1[p], cand, v
        elif cand > down2[p]:
            down2[p] = cand
    up = [0] * (n + 1)  # longest path leaving the node through its parent
    for v in order[1:]:
        p = parent[v]
        via_sibling = down2[p] if best_child[p] == v else down1[p]
        up[v] = parent_w[v] + max(up[p], via_sibling)
    print(" ".join(str(max(down1[v], up[v])) for v in range(1, n + 1)))


main()
