# O(n): Manacher on the text interleaved with separators (length 2n + 1), one pass for both parities.
import sys


def main():
    s = sys.stdin.readline().strip()
    t = "#" + "#".join(s) + "#"
    m = len(t)
    radius = [0] * m  # radius[i]: palindrome t[i - r .. i + r]
    center = right = 0
    for i in range(m):
        r = min(radius[2 * center - i], right - i) if i < right else 0
        while i - r - 1 >= 0 and i + r + 1 < m and t[i - r - 1] == t[i + r + 1]:
            r += 1
        radius[i] = r
        if i + r > right:
            center, right = i, i + r
    # A radius r in t covers (r + 1) // 2 palindromes of s centred there.
    print(sum((r + 1) // 2 for r in radius))


main()
