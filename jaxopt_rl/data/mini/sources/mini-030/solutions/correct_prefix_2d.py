# O(R*C + q): 2-D prefix sums, each rectangle by inclusion-exclusion of four corners.
import sys
from itertools import accumulate


def read():
    data = sys.stdin.buffer.read().split()
    rows, cols = int(data[0]), int(data[1])
    grid = [list(map(int, data[2 + r * cols : 2 + (r + 1) * cols])) for r in range(rows)]
    pos = 2 + rows * cols
    q = int(data[pos])
    queries = []
    for i in range(q):
        r1, c1, r2, c2 = (int(x) for x in data[pos + 1 + 4 * i : pos + 5 + 4 * i])
        queries.append((min(r1, r2), min(c1, c2), max(r1, r2), max(c1, c2)))
    return rows, cols, grid, queries


def main():
    _rows, cols, grid, queries = read()
    prefix = [[0] * (cols + 1)]
    for row in grid:
        above = prefix[-1]
        prefix.append([0, *map(int.__add__, above[1:], accumulate(row))])
    out = []
    for r1, c1, r2, c2 in queries:
        hi, lo = prefix[r2], prefix[r1 - 1]
        out.append(hi[c2] - hi[c1 - 1] - lo[c2] + lo[c1 - 1])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
