# O(n log n + q): group labels plus a ferry graph; a merge walks the smaller group by BFS over its ferries and relabels it.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    adj = [[] for _ in range(n + 1)]
    label = list(range(n + 1))
    size = [1] * (n + 1)
    out = []
    pos = 2
    for _ in range(q):
        kind, a, b = data[pos], int(data[pos + 1]), int(data[pos + 2])
        pos += 3
        la, lb = label[a], label[b]
        if kind == b"Q":
            out.append("YES" if la == lb else "NO")
            continue
        if la == lb:
            continue  # the ferry closes no new gap, so the graph stays a forest
        if size[la] < size[lb]:
            a, b, la, lb = b, a, lb, la
        size[la] += size[lb]
        label[b] = la
        queue = deque([b])
        while queue:
            u = queue.popleft()
            for v in adj[u]:
                if label[v] == lb:
                    label[v] = la
                    queue.append(v)
        adj[a].append(b)
        adj[b].append(a)
    sys.stdout.write("\n".join(out) + "\n")


main()
