# O(n + hits * m): Rabin-Karp polynomial rolling hash modulo 2^61 - 1; every hash hit is confirmed by a direct comparison.
import sys

MOD = (1 << 61) - 1
BASE = 131


def main():
    s, p = sys.stdin.read().split()
    n, m = len(s), len(p)
    if m > n:
        print(0, -1)
        return
    target = 0
    window = 0
    for i in range(m):
        target = (target * BASE + ord(p[i])) % MOD
        window = (window * BASE + ord(s[i])) % MOD
    top = pow(BASE, m - 1, MOD)
    count = 0
    first = -1
    for i in range(n - m + 1):
        if window == target and s.startswith(p, i):
            count += 1
            if first < 0:
                first = i + 1
        if i + m < n:
            window = ((window - ord(s[i]) * top) * BASE + ord(s[i + m])) % MOD
    print(count, first)


main()
