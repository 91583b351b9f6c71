# BUG: the sparse table only keeps levels up to 2^9 (written for n <= 1000), so ranges longer than 1024 skip their middle.
import sys
from math import gcd


def read():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    values = [int(x) for x in data[2 : 2 + n]]
    queries = [(int(data[2 + n + 2 * i]), int(data[3 + n + 2 * i])) for i in range(q)]
    return n, values, queries

LEVELS = 10


def main():
    n, values, queries = read()
    table = [values]
    step = 1
    while 2 * step <= n and len(table) < LEVELS:
        prev = table[-1]
        table.append(list(map(gcd, prev[: n - 2 * step + 1], prev[step : n - step + 1])))
        step *= 2
    out = []
    for left, r in queries:
        k = min((r - left + 1).bit_length() - 1, len(table) - 1)
        row = table[k]
        out.append(gcd(row[left - 1], row[r - (1 << k)]))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
