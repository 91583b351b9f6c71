# O(n * ceil(m / w)): Hyyro's bit-parallel Levenshtein (Myers' algorithm); a whole DP column lives in Python big-integer bit vectors.
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    if len(a) < len(b):
        a, b = b, a  # b indexes the bit positions (the shorter string)
    m = len(b)
    mask = (1 << m) - 1
    top = 1 << (m - 1)
    match = {}
    for i, ch in enumerate(b):
        match[ch] = match.get(ch, 0) | (1 << i)
    plus, minus = mask, 0  # vertical +1 / -1 deltas of the current column
    score = m
    for ch in a:
        eq = match.get(ch, 0)
        xv = eq | minus
        xh = (((eq & plus) + plus) ^ plus) | eq
        hp = minus | ~(xh | plus)
        hm = plus & xh
        if hp & top:
            score += 1
        elif hm & top:
            score -= 1
        hp = ((hp << 1) | 1) & mask
        hm = (hm << 1) & mask
        plus = hm | ~(xv | hp) & mask
        minus = hp & xv
    print(score)


main()
