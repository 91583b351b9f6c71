# O((n + m) * d): Ukkonen's band - DP only within |i - j| <= k, doubling k until the answer is at most k (fast for similar texts).
import sys


def banded(a, b, k):
    """Edit distance if it is <= k, else some value > k."""
    n, m = len(a), len(b)
    big = k + 1
    prev = {j: j for j in range(0, min(m, k) + 1)}
    for i in range(1, n + 1):
        cur = {}
        lo, hi = max(0, i - k), min(m, i + k)
        for j in range(lo, hi + 1):
            if j == 0:
                cur[0] = i
                continue
            best = prev.get(j - 1, big) + (a[i - 1] != b[j - 1])
            up = prev.get(j, big) + 1
            left = cur.get(j - 1, big) + 1
            if up < best:
                best = up
            if left < best:
                best = left
            cur[j] = best
        prev = cur
    return prev.get(m, big)


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    k = max(1, abs(len(a) - len(b)))
    while True:
        d = banded(a, b, k)
        if d <= k:
            print(d)
            return
        k *= 2


main()
