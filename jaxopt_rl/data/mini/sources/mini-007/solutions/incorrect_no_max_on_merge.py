# BUG: when a stretch overlaps the current piece, the piece's end becomes that stretch's end even if it is shorter (nested stretches cut the piece).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    it = iter(map(int, data[1:1 + 2 * n]))
    stretches = sorted(zip(it, it))
    total = pieces = 0
    cur_l, cur_r = stretches[0]
    for left, r in stretches[1:]:
        if left > cur_r:
            total += cur_r - cur_l
            pieces += 1
            cur_l, cur_r = left, r
        else:
            cur_r = r
    total += cur_r - cur_l
    pieces += 1
    print(total, pieces)


main()
