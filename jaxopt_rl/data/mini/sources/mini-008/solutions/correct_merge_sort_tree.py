# O(n log n + q log^2 n): segment tree whose nodes hold sorted prev[] lists; count prev < l over [l, r] with bisect per node.
import sys
from bisect import bisect_left


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    last = {}
    prev = []
    for i in range(1, n + 1):
        species = data[1 + i]
        prev.append(last.get(species, 0))
        last[species] = i
    size = 1
    while size < n:
        size *= 2
    nodes = [[] for _ in range(2 * size)]
    for i, p in enumerate(prev):
        nodes[size + i] = [p]
    for v in range(size - 1, 0, -1):
        nodes[v] = sorted(nodes[2 * v] + nodes[2 * v + 1])
    out = []
    pos = 2 + n
    for _ in range(q):
        left, right = int(data[pos]), int(data[pos + 1])
        pos += 2
        lo, hi = left - 1 + size, right + size
        total = 0
        while lo < hi:
            if lo & 1:
                total += bisect_left(nodes[lo], left)
                lo += 1
            if hi & 1:
                hi -= 1
                total += bisect_left(nodes[hi], left)
            lo //= 2
            hi //= 2
        out.append(total)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
