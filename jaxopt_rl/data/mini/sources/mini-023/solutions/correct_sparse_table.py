# O(n log n + q): sparse table of gcds over power-of-two windows; each query = gcd of two overlapping windows.
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
    table = [values]
    step = 1
    while 2 * step <= n:
        prev = table[-1]
        table.append(list(map(gcd, prev[: n - 2 * step + 1], prev[step : n - step + 1])))
        step *= 2
    out = []
    for left, r in queries:
        k = (r - left + 1).bit_length() - 1
        row = table[k]
        out.append(gcd(row[left - 1], row[r - (1 << k)]))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
