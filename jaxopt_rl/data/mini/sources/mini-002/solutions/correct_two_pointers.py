# O(n log n): sort, then two pointers from both ends, multiplying the run lengths of matching weights.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, w = int(data[0]), int(data[1])
    a = sorted(map(int, data[2:2 + n]))
    lo, hi = 0, n - 1
    pairs = 0
    while lo < hi:
        s = a[lo] + a[hi]
        if s < w:
            lo += 1
        elif s > w:
            hi -= 1
        elif a[lo] == a[hi]:
            k = hi - lo + 1
            pairs += k * (k - 1) // 2
            break
        else:
            x, y = a[lo], a[hi]
            left = 0
            while a[lo] == x:
                lo += 1
                left += 1
            right = 0
            while a[hi] == y:
                hi -= 1
                right += 1
            pairs += left * right
    print(pairs)


main()
