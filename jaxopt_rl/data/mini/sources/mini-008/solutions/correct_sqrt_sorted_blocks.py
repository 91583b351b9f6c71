# O(q (n/B log B + B)): count prev < l over [l, r] using blocks of B jars with sorted prev[] (bisect) plus scans of the ragged ends.
import sys
from bisect import bisect_left
from math import isqrt


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    last = {}
    prev = []
    for i in range(1, n + 1):
        species = data[1 + i]
        prev.append(last.get(species, 0))
        last[species] = i
    size = max(1, isqrt(n * 4))
    blocks = [sorted(prev[b:b + size]) for b in range(0, n, size)]
    out = []
    pos = 2 + n
    for _ in range(q):
        left, right = int(data[pos]), int(data[pos + 1])
        pos += 2
        lo, hi = left - 1, right  # jars prev[lo:hi]
        first = -(-lo // size)
        end = hi // size
        if first >= end:
            out.append(sum(1 for p in prev[lo:hi] if p < left))
            continue
        total = sum(1 for p in prev[lo:first * size] if p < left)
        for b in range(first, end):
            total += bisect_left(blocks[b], left)
        total += sum(1 for p in prev[end * size:hi] if p < left)
        out.append(total)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
