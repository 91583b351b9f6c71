# O(m log m): lazy Prim from town 1 with a binary heap of candidate cables.
import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, m = int(data[0]), int(data[1])
    adj = [[] for _ in range(n + 1)]
    for i in range(m):
        u, v, w = int(data[2 + 3 * i]), int(data[3 + 3 * i]), int(data[4 + 3 * i])
        adj[u].append((w, v))
        adj[v].append((w, u))
    in_tree = [False] * (n + 1)
    heap = [(0, 1)]
    total, count = 0, 0
    while heap and count < n:
        w, v = heapq.heappop(heap)
        if in_tree[v]:
            continue
        in_tree[v] = True
        total += w
        count += 1
        for item in adj[v]:
            if not in_tree[item[1]]:
                heapq.heappush(heap, item)
    print(total if count == n else "IMPOSSIBLE")


main()
