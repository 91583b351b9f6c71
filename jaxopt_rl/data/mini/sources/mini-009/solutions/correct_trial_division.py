# O(N * pi(sqrt N)) worst case: every number up to the largest r is tested by trial division with the primes found so far.
import sys
from bisect import bisect_left, bisect_right


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    primes = []
    for m in range(2, top + 1):
        for p in primes:
            if p * p > m:
                primes.append(m)
                break
            if m % p == 0:
                break
        else:
            primes.append(m)
    prefix = [0]
    for p in primes:
        prefix.append(prefix[-1] + p)
    out = []
    for i in range(0, 2 * q, 2):
        lo = bisect_left(primes, ends[i])
        hi = bisect_right(primes, ends[i + 1])
        out.append(f"{hi - lo} {prefix[hi] - prefix[lo]}")
    sys.stdout.write("\n".join(out) + "\n")


main()
