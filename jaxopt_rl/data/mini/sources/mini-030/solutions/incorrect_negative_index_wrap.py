# BUG: 0-based prefix table without a zero border; for a block touching row 1 or column 1, index -1 silently wraps to the last row/column.
import sys
from itertools import accumulate


def main():
    data = sys.stdin.buffer.read().split()
    rows, cols = int(data[0]), int(data[1])
    prefix = []  # prefix[r][c]: sum of the block (0, 0)..(r, c), 0-based
    for r in range(rows):
        row = list(accumulate(map(int, data[2 + r * cols : 2 + (r + 1) * cols])))
        if prefix:
            row = [a + b for a, b in zip(row, prefix[-1])]
        prefix.append(row)
    pos = 2 + rows * cols
    out = []
    for i in range(int(data[pos])):
        r1, c1, r2, c2 = (int(x) - 1 for x in data[pos + 1 + 4 * i : pos + 5 + 4 * i])
        r1, r2 = min(r1, r2), max(r1, r2)
        c1, c2 = min(c1, c2), max(c1, c2)
        total = prefix[r2][c2] - prefix[r1 - 1][c2] - prefix[r2][c1 - 1] + prefix[r1 - 1][c1 - 1]
        out.append(total)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
