# O(n log n + n^2) memmove worst case: keep disjoint pieces in sorted lists; each stretch (input order) swallows the pieces it meets via bisect + slice replacement.
import sys
from bisect import bisect_left, bisect_right


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    starts = []
    ends = []
    for i in range(n):
        left, r = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        lo = bisect_left(ends, left)  # first piece that ends at or after left (touching joins)
        hi = bisect_right(starts, r)  # pieces starting at or before r
        if lo < hi:
            left = min(left, starts[lo])
            r = max(r, ends[hi - 1])
        starts[lo:hi] = [left]
        ends[lo:hi] = [r]
    print(sum(ends) - sum(starts), len(starts))


main()
