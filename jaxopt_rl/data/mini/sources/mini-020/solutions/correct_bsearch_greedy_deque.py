# O(n log S) with heavy constants: every check copies the crates into a deque and pops them one by one.
import sys
from collections import deque


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    _n, k, weights = read()

    def fits(cap):
        queue = deque(weights)
        trucks = 0
        while queue:
            trucks += 1
            if trucks > k:
                return False
            load = 0
            while queue and load + queue[0] <= cap:
                load += queue.popleft()
        return True

    lo, hi = max(weights), sum(weights)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    print(lo)


main()
