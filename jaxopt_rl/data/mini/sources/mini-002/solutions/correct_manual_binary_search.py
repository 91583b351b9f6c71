# O(n log n): sort, then hand-written lower/upper-bound binary searches per cookie (Python loops instead of bisect).
import sys


def lower_bound(a, x, lo):
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def upper_bound(a, x, lo):
    hi = len(a)
    while lo < hi:
        mid = (lo + hi) // 2
        if a[mid] <= x:
            lo = mid + 1
        else:
            hi = mid
    return lo


def main():
    data = sys.stdin.buffer.read().split()
    n, w = int(data[0]), int(data[1])
    a = sorted(map(int, data[2:2 + n]))
    pairs = 0
    for i in range(n):
        y = w - a[i]
        if y < a[i]:
            break
        pairs += upper_bound(a, y, i + 1) - lower_bound(a, y, i + 1)
    print(pairs)


main()
