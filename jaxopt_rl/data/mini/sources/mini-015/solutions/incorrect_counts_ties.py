# BUG: the merge takes from the right run when right <= left, so equal catalogue numbers are counted as out of order.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    a = list(map(int, data[1:1 + n]))
    buf = [0] * n
    inversions = 0
    width = 1
    while width < n:
        for lo in range(0, n, 2 * width):
            mid = min(lo + width, n)
            hi = min(lo + 2 * width, n)
            i, j, k = lo, mid, lo
            while i < mid and j < hi:
                if a[j] <= a[i]:
                    buf[k] = a[j]
                    inversions += mid - i
                    j += 1
                else:
                    buf[k] = a[i]
                    i += 1
                k += 1
            buf[k:hi] = a[i:mid] if i < mid else a[j:hi]
        a, buf = buf, a
        width *= 2
    print(inversions)


main()
