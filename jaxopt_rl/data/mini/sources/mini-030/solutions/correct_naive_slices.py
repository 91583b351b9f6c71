# O(q * area / C-speed): sums every rectangle directly, one slice sum per covered row.
import sys


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
    _rows, _cols, grid, queries = read()
    out = []
    for r1, c1, r2, c2 in queries:
        out.append(sum(sum(grid[r][c1 - 1 : c2]) for r in range(r1 - 1, r2)))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
