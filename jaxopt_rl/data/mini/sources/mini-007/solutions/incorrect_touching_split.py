# BUG: merges only when the next stretch starts strictly inside the piece, so touching stretches are counted as separate pieces.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    it = iter(map(int, data[1:1 + 2 * n]))
    stretches = sorted(zip(it, it))
    total = pieces = 0
    cur_l, cur_r = stretches[0]
    for left, r in stretches:
        if left >= cur_r:
            total += cur_r - cur_l
            pieces += 1
            cur_l, cur_r = left, r
        elif r > cur_r:
            cur_r = r
    total += cur_r - cur_l
    pieces += 1
    print(total, pieces)


main()
