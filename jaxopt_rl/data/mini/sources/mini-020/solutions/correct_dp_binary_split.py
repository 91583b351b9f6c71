# O(k * n log n): DP over trucks, the optimal last split of each prefix found by binary search on a monotone cost.
import sys
from itertools import accumulate


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    n, k, weights = read()
    k = min(k, n)
    prefix = [0, *accumulate(weights)]
    best = prefix[:]
    for _ in range(k - 1):
        new = [0] * (n + 1)
        for i in range(1, n + 1):
            # best[j] grows with j while the last load prefix[i] - prefix[j] shrinks: find the crossing.
            lo, hi = 0, i - 1
            while lo < hi:
                mid = (lo + hi) // 2
                if best[mid] >= prefix[i] - prefix[mid]:
                    hi = mid
                else:
                    lo = mid + 1
            value = max(best[lo], prefix[i] - prefix[lo])
            if lo > 0:
                value = min(value, max(best[lo - 1], prefix[i] - prefix[lo - 1]))
            new[i] = value
        best = new
    print(best[n])


main()
