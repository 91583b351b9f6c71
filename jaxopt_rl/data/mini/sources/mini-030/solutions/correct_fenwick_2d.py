# O(R*C + q log R log C): 2-D Fenwick (binary indexed) tree built in linear time, four prefix queries per rectangle.
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
    rows, cols, grid, queries = read()
    tree = [[0] * (cols + 1)] + [[0, *row] for row in grid]
    for r in range(1, rows + 1):  # build along columns inside each row
        t = tree[r]
        for c in range(1, cols + 1):
            up = c + (c & -c)
            if up <= cols:
                t[up] += t[c]
    for r in range(1, rows + 1):  # then along rows
        up = r + (r & -r)
        if up <= rows:
            src, dst = tree[r], tree[up]
            for c in range(1, cols + 1):
                dst[c] += src[c]

    def prefix(r, c):
        total = 0
        while r > 0:
            t = tree[r]
            cc = c
            while cc > 0:
                total += t[cc]
                cc -= cc & -cc
            r -= r & -r
        return total

    out = []
    for r1, c1, r2, c2 in queries:
        out.append(prefix(r2, c2) - prefix(r1 - 1, c2) - prefix(r2, c1 - 1) + prefix(r1 - 1, c1 - 1))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
