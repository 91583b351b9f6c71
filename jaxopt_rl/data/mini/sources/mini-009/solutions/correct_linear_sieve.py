# O(N) but heavy constant: Euler's linear sieve (each composite crossed out once by its smallest prime factor), all in Python loops.
import sys
from bisect import bisect_left, bisect_right


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    smallest = [0] * (top + 1)
    primes = []
    for i in range(2, top + 1):
        if smallest[i] == 0:
            smallest[i] = i
            primes.append(i)
        limit = smallest[i]
        for p in primes:
            if p > limit or p * i > top:
                break
            smallest[p * i] = p
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
