# BUG: scans positions range(n - m) instead of range(n - m + 1), so a motif ending exactly at the end of the song is missed.
import sys


def main():
    s, p = sys.stdin.read().split()
    n, m = len(s), len(p)
    count = 0
    first = -1
    for i in range(n - m):
        if s.startswith(p, i):
            count += 1
            if first < 0:
                first = i + 1
    print(count, first)


main()
