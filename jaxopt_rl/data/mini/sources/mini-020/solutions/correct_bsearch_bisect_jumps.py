# O(k log n log S): binary search on the answer; each check jumps truck by truck with bisect on prefix sums.
import bisect
import sys
from itertools import accumulate


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    n, k, weights = read()
    prefix = [0, *accumulate(weights)]

    def fits(cap):
        start = 0
        for _ in range(k):
            # Furthest end such that prefix[end] - prefix[start] <= cap.
            start = bisect.bisect_right(prefix, prefix[start] + cap) - 1
            if start >= n:
                return True
        return False

    lo, hi = max(weights), prefix[-1]
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    print(lo)


main()
