# O((n + q) log n) with call overhead: top-down recursive segment tree build and query.
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
    size = 1
    while size < n:
        size *= 2
    tree = [0] * (2 * size)

    def build(node, lo, hi):
        if hi - lo == 1:
            tree[node] = values[lo]
            return
        mid = (lo + hi) // 2
        build(2 * node, lo, mid)
        build(2 * node + 1, mid, hi)
        tree[node] = gcd(tree[2 * node], tree[2 * node + 1])

    def query(node, lo, hi, left, r):
        if r <= lo or hi <= left:
            return 0
        if left <= lo and hi <= r:
            return tree[node]
        mid = (lo + hi) // 2
        return gcd(query(2 * node, lo, mid, left, r), query(2 * node + 1, mid, hi, left, r))

    build(1, 0, n)
    out = [query(1, 0, n, left - 1, r) for left, r in queries]
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
