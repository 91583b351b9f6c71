# O(n + q * sqrt(n)): square-root decomposition; each plan sums two partial blocks and the whole blocks with sum() over slices.
import sys
from math import isqrt


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    d = list(map(int, data[2:2 + n]))
    ups = [x if x > 0 else 0 for x in d]
    downs = [-x if x < 0 else 0 for x in d]
    size = max(1, isqrt(n))
    up_blocks = [sum(ups[i:i + size]) for i in range(0, n, size)]
    down_blocks = [sum(downs[i:i + size]) for i in range(0, n, size)]

    def range_sum(values, blocks, lo, hi):
        # sum of values[lo:hi]
        first_block = -(-lo // size)
        last_block = hi // size
        if first_block >= last_block:
            return sum(values[lo:hi])
        return (sum(values[lo:first_block * size]) + sum(blocks[first_block:last_block])
                + sum(values[last_block * size:hi]))

    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        if a <= b:
            out.append(range_sum(ups, up_blocks, a, b))
        else:
            out.append(range_sum(downs, down_blocks, b, a))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
