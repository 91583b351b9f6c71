# O(n log n): polynomial hashes of the text and its reverse; the radius at every centre is found by binary search.
import sys

MOD = (1 << 61) - 1
BASE = 131


def main():
    s = sys.stdin.readline().strip()
    n = len(s)
    fwd = [0] * (n + 1)
    rev = [0] * (n + 1)
    power = [1] * (n + 1)
    for i in range(n):
        fwd[i + 1] = (fwd[i] * BASE + ord(s[i])) % MOD
        rev[i + 1] = (rev[i] * BASE + ord(s[n - 1 - i])) % MOD
        power[i + 1] = power[i] * BASE % MOD

    def is_pal(lo, hi):  # s[lo:hi]
        a = (fwd[hi] - fwd[lo] * power[hi - lo]) % MOD
        rlo, rhi = n - hi, n - lo
        b = (rev[rhi] - rev[rlo] * power[rhi - rlo]) % MOD
        return a == b

    total = 0
    for center in range(2 * n - 1):
        lo, hi = center // 2, (center + 1) // 2
        if s[lo] != s[hi]:
            continue
        # Largest k with s[lo - k + 1 .. hi + k - 1] a palindrome (k counts palindromes at this centre).
        good, bad = 1, min(lo, n - 1 - hi) + 2
        while bad - good > 1:
            mid = (good + bad) // 2
            if is_pal(lo - mid + 1, hi + mid):
                good = mid
            else:
                bad = mid
        total += good
    print(total)


main()
