# BUG: block prefix/suffix maxima restart from 0 at each block boundary instead of from the first reading, so an all-negative window reports 0.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    prefix = [0] * n
    best = 0
    for i in range(n):
        if i % k == 0:
            best = 0
        best = max(best, t[i])
        prefix[i] = best
    suffix = [0] * n
    best = 0
    for i in range(n - 1, -1, -1):
        if (i + 1) % k == 0:
            best = 0
        best = max(best, t[i])
        suffix[i] = best
    print(" ".join(str(max(suffix[i], prefix[i + k - 1])) for i in range(n - k + 1)))


main()
