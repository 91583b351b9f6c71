# O(n log L): patience sorting with a hand-written binary search in a Python loop instead of bisect.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tails = []
    for i in range(1, n + 1):
        x = int(data[i])
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if tails[mid] < x:
                lo = mid + 1
            else:
                hi = mid
        if lo == len(tails):
            tails.append(x)
        else:
            tails[lo] = x
    print(len(tails))


main()
