# BUG: crosses out multiples for p in range(2, isqrt(top)), excluding isqrt(top) itself, so p*p survives as a "prime" when isqrt(top) is prime.
import sys
from itertools import accumulate
from math import isqrt


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    sieve = bytearray([1]) * (top + 1)
    sieve[0] = 0
    if top >= 1:
        sieve[1] = 0
    for p in range(2, isqrt(top)):
        if sieve[p]:
            sieve[p * p::p] = bytes(len(range(p * p, top + 1, p)))
    count = list(accumulate(sieve))
    total = list(accumulate(i if flag else 0 for i, flag in enumerate(sieve)))
    out = []
    for i in range(0, 2 * q, 2):
        a, b = ends[i], ends[i + 1]
        out.append(f"{count[b] - count[a - 1]} {total[b] - total[a - 1]}")
    sys.stdout.write("\n".join(out) + "\n")


main()
