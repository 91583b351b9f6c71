# O((n + q) log n): bottom-up segment tree, each query climbs from both ends of the range.
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
    tree = [0] * n + values
    for i in range(n - 1, 0, -1):
        tree[i] = gcd(tree[2 * i], tree[2 * i + 1])
    out = []
    for left, r in queries:
        lo, hi = left - 1 + n, r + n
        g = 0
        while lo < hi:
            if lo & 1:
                g = gcd(g, tree[lo])
                lo += 1
            if hi & 1:
                hi -= 1
                g = gcd(g, tree[hi])
            lo >>= 1
            hi >>= 1
        out.append(g)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
