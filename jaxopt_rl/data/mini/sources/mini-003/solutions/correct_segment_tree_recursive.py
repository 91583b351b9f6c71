# O(n log n): compress brightness to ranks; top-down recursive segment tree of range maxima (function-call heavy).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    b = list(map(int, data[1:1 + n]))
    values = sorted(set(b))
    rank = {v: i for i, v in enumerate(values)}
    m = len(values)
    tree = [0] * (4 * m)

    def query(node, lo, hi, right):
        # max over ranks [lo, hi) intersected with [0, right)
        if right <= lo:
            return 0
        if hi <= right:
            return tree[node]
        mid = (lo + hi) // 2
        return max(query(2 * node, lo, mid, right), query(2 * node + 1, mid, hi, right))

    def update(node, lo, hi, pos, value):
        if hi - lo == 1:
            if tree[node] < value:
                tree[node] = value
            return
        mid = (lo + hi) // 2
        if pos < mid:
            update(2 * node, lo, mid, pos, value)
        else:
            update(2 * node + 1, mid, hi, pos, value)
        tree[node] = max(tree[2 * node], tree[2 * node + 1])

    for x in b:
        r = rank[x]
        update(1, 0, m, r, query(1, 0, m, r) + 1)
    print(tree[1])


main()
