# O(n log S) with extra copies: each check reverses a fresh copy of the crates and pop()s from the end.
import sys


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    _n, k, weights = read()

    def fits(cap):
        stack = weights[::-1]
        trucks, load = 1, 0
        while stack:
            w = stack.pop()
            if load + w <= cap:
                load += w
            else:
                trucks += 1
                load = w
        return trucks <= k

    lo, hi = max(weights), sum(weights)
    while lo < hi:
        mid = (lo + hi) // 2
        if fits(mid):
            hi = mid
        else:
            lo = mid + 1
    print(lo)


main()
