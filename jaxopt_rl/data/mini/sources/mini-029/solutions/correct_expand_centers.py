# O(n + P), P = answer: expands around each of the 2n - 1 centres; quadratic on long runs like "aaaa...".
import sys


def main():
    s = sys.stdin.readline().strip()
    n = len(s)
    total = 0
    for center in range(2 * n - 1):
        lo, hi = center // 2, (center + 1) // 2
        while lo >= 0 and hi < n and s[lo] == s[hi]:
            total += 1
            lo -= 1
            hi += 1
    print(total)


main()
