# BUG: assumes the first corner is always the top-left one, so rectangles given by other corner pairs get wrong sums.
import sys
from itertools import accumulate


def main():
    data = sys.stdin.buffer.read().split()
    rows, cols = int(data[0]), int(data[1])
    prefix = [[0] * (cols + 1)]
    for r in range(rows):
        row = map(int, data[2 + r * cols : 2 + (r + 1) * cols])
        prefix.append([0, *map(int.__add__, prefix[-1][1:], accumulate(row))])
    pos = 2 + rows * cols
    out = []
    for i in range(int(data[pos])):
        r1, c1, r2, c2 = (int(x) for x in data[pos + 1 + 4 * i : pos + 5 + 4 * i])
        out.append(prefix[r2][c2] - prefix[r1 - 1][c2] - prefix[r2][c1 - 1] + prefix[r1 - 1][c1 - 1])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
