# O(n + q sqrt n): blocks of about sqrt(n) values with precomputed gcds; a query combines two partial blocks and the full ones.
import sys
from math import gcd


def read():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    values = [int(x) for x in data[2 : 2 + n]]
    queries = [(int(data[2 + n + 2 * i]), int(data[3 + n + 2 * i])) for i in range(q)]
    return n, values, queries


def main():
    n, values, queries = read()
    size = max(1, int(n**0.5))
    blocks = [gcd(*values[s : s + size]) for s in range(0, n, size)]
    out = []
    for left, r in queries:
        lo, hi = left - 1, r  # half-open [lo, hi)
        bl, bh = -(-lo // size), hi // size  # full blocks bl .. bh-1
        if bl >= bh:
            out.append(gcd(*values[lo:hi]))
        else:
            g = gcd(*blocks[bl:bh])
            g = gcd(g, *values[lo : bl * size], *values[bh * size : hi])
            out.append(g)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
