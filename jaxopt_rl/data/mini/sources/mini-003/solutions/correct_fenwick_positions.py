# O(n log n): visit lanterns by increasing brightness (equal ones as a batch) with a Fenwick prefix-max over positions.
import sys
from itertools import groupby


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    b = list(map(int, data[1:1 + n]))
    order = sorted(range(n), key=b.__getitem__)
    tree = [0] * (n + 1)
    best = 0
    for _, group in groupby(order, key=b.__getitem__):
        batch = []
        for i in group:
            r = i  # positions 0..i-1 are Fenwick indices 1..i
            cur = 0
            while r > 0:
                if tree[r] > cur:
                    cur = tree[r]
                r &= r - 1
            batch.append((i + 1, cur + 1))
        # equal brightness must not extend each other, so write the batch after reading it
        for r, cur in batch:
            if cur > best:
                best = cur
            while r <= n:
                if tree[r] < cur:
                    tree[r] = cur
                r += r & -r
    print(best)


main()
