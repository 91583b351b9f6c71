# O(n + m): Knuth-Morris-Pratt; the failure function lets the scan continue after a (possibly overlapping) match without backtracking.
import sys


def main():
    s, p = sys.stdin.read().split()
    m = len(p)
    fail = [0] * m
    k = 0
    for i in range(1, m):
        while k and p[i] != p[k]:
            k = fail[k - 1]
        if p[i] == p[k]:
            k += 1
        fail[i] = k
    count = 0
    first = -1
    k = 0
    for i, ch in enumerate(s):
        while k and ch != p[k]:
            k = fail[k - 1]
        if ch == p[k]:
            k += 1
        if k == m:
            count += 1
            if first < 0:
                first = i - m + 2
            k = fail[k - 1]
    print(count, first)


main()
