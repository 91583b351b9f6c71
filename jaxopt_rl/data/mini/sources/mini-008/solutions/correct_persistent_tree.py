# O((n + q) log n) online, large constant: persistent segment tree; version r marks the last jar of each species among 1..r.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    # node arrays; node 0 is the shared empty tree
    left_child = [0]
    right_child = [0]
    count = [0]

    def add(node, lo, hi, pos, delta):
        """Copy of `node` (covering positions [lo, hi)) with `delta` added at `pos`."""
        new = len(count)
        left_child.append(left_child[node])
        right_child.append(right_child[node])
        count.append(count[node] + delta)
        if hi - lo > 1:
            mid = (lo + hi) // 2
            if pos < mid:
                left_child[new] = add(left_child[node], lo, mid, pos, delta)
            else:
                right_child[new] = add(right_child[node], mid, hi, pos, delta)
        return new

    def query(node, lo, hi, a):
        """Sum over positions [a, hi) of the subtree."""
        total = 0
        while node and a < hi:
            if a <= lo:
                return total + count[node]
            mid = (lo + hi) // 2
            if a < mid:
                total += count[right_child[node]]
                node, hi = left_child[node], mid
            else:
                node, lo = right_child[node], mid
        return total

    roots = [0] * (n + 1)
    last = {}
    root = 0
    for i in range(1, n + 1):
        species = data[1 + i]
        if species in last:
            root = add(root, 1, n + 1, last[species], -1)
        root = add(root, 1, n + 1, i, 1)
        last[species] = i
        roots[i] = root
    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        out.append(query(roots[b], 1, n + 1, a))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
