# O(n log n): compress brightness to ranks; a Fenwick tree over ranks gives the best run ending below the current rank.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    b = list(map(int, data[1:1 + n]))
    rank = {v: i + 1 for i, v in enumerate(sorted(set(b)))}
    m = len(rank)
    tree = [0] * (m + 1)
    best = 0
    for x in b:
        r = rank[x] - 1  # strictly smaller values only
        cur = 0
        while r > 0:
            if tree[r] > cur:
                cur = tree[r]
            r &= r - 1
        cur += 1
        if cur > best:
            best = cur
        r = rank[x]
        while r <= m:
            if tree[r] < cur:
                tree[r] = cur
            r += r & -r
    print(best)


main()
