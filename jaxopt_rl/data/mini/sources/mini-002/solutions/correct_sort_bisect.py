# O(n log n): sort, then for every cookie count the partners after it with two bisect (C) binary searches.
import sys
from bisect import bisect_left, bisect_right


def main():
    data = sys.stdin.buffer.read().split()
    n, w = int(data[0]), int(data[1])
    a = sorted(map(int, data[2:2 + n]))
    pairs = 0
    for i, x in enumerate(a):
        y = w - x
        if y < x:
            break
        pairs += bisect_right(a, y, i + 1) - bisect_left(a, y, i + 1)
    print(pairs)


main()
