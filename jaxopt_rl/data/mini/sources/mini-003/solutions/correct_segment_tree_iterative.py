# O(n log n): compress brightness to ranks; bottom-up segment tree of range maxima over ranks, queried on [0, rank).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    b = list(map(int, data[1:1 + n]))
    rank = {v: i for i, v in enumerate(sorted(set(b)))}
    size = 1
    while size < len(rank):
        size *= 2
    tree = [0] * (2 * size)
    for x in b:
        lo, hi = size, size + rank[x]
        cur = 0
        while lo < hi:
            if lo & 1:
                cur = max(cur, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                cur = max(cur, tree[hi])
            lo //= 2
            hi //= 2
        v = size + rank[x]
        cur += 1
        if tree[v] < cur:
            tree[v] = cur
            v //= 2
            while v:
                tree[v] = max(tree[2 * v], tree[2 * v + 1])
                v //= 2
    print(tree[1])


main()
