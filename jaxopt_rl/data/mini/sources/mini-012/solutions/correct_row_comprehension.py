# O(n * W): 1-D DP where each item rebuilds the row with one list comprehension over zip() (no per-cell index arithmetic).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    best = [0] * (cap + 1)
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        if w > cap:
            continue
        best[w:] = [b if b >= a + v else a + v for b, a in zip(best[w:], best)]
    print(best[cap])


main()
