# O(n log S): binary search on the answer with a linear greedy check (start a new truck when the load would overflow).
import sys


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    _n, k, weights = read()

    def trucks_needed(cap):
        count, load = 1, 0
        for w in weights:
            if load + w > cap:
                count += 1
                load = w
            else:
                load += w
        return count

    lo, hi = max(weights), sum(weights)
    while lo < hi:
        mid = (lo + hi) // 2
        if trucks_needed(mid) <= k:
            hi = mid
        else:
            lo = mid + 1
    print(lo)


main()
