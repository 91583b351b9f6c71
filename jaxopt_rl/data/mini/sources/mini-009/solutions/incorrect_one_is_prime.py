# BUG: the sieve clears index 0 but forgets index 1, so locker 1 is counted as a prime.
import sys
from bisect import bisect_left, bisect_right
from itertools import accumulate, compress


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    sieve = bytearray([1]) * (top + 1)
    sieve[0] = 0
    p = 2
    while p * p <= top:
        if sieve[p]:
            sieve[p * p::p] = bytes(len(range(p * p, top + 1, p)))
        p += 1
    primes = list(compress(range(top + 1), sieve))
    prefix = [0, *accumulate(primes)]
    out = []
    for i in range(0, 2 * q, 2):
        lo = bisect_left(primes, ends[i])
        hi = bisect_right(primes, ends[i + 1])
        out.append(f"{hi - lo} {prefix[hi] - prefix[lo]}")
    sys.stdout.write("\n".join(out) + "\n")


main()
