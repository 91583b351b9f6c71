# BUG: expands only around single letters, so even-length palindromes such as "abba" are never counted.
import sys


def main():
    s = sys.stdin.readline().strip()
    n = len(s)
    total = 0
    for center in range(n):
        lo = hi = center
        while lo >= 0 and hi < n and s[lo] == s[hi]:
            total += 1
            lo -= 1
            hi += 1
    print(total)


main()
