# O(N log log N) + O(N) tables + O(q): bytearray sieve, then per-number prefix count and prefix sum tables (accumulate) for O(1) answers.
import sys
from itertools import accumulate


def main():
    data = sys.stdin.buffer.read().split()
    q = int(data[0])
    ends = list(map(int, data[1:1 + 2 * q]))
    top = max(ends[1::2])
    sieve = bytearray([1]) * (top + 1)
    sieve[0] = 0
    if top >= 1:
        sieve[1] = 0
    p = 2
    while p * p <= top:
        if sieve[p]:
            sieve[p * p::p] = bytes(len(range(p * p, top + 1, p)))
        p += 1
    count = list(accumulate(sieve))
    total = list(accumulate(i if flag else 0 for i, flag in enumerate(sieve)))
    out = []
    for i in range(0, 2 * q, 2):
        a, b = ends[i], ends[i + 1]
        out.append(f"{count[b] - count[a - 1]} {total[b] - total[a - 1]}")
    sys.stdout.write("\n".join(out) + "\n")


main()
