# O(n log n): sort stretches by start, then one sweep merging each into the current piece while it starts at or before the piece's end.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    it = iter(map(int, data[1:1 + 2 * n]))
    stretches = sorted(zip(it, it))
    total = pieces = 0
    cur_l, cur_r = stretches[0]
    for left, r in stretches:
        if left > cur_r:
            total += cur_r - cur_l
            pieces += 1
            cur_l, cur_r = left, r
        elif r > cur_r:
            cur_r = r
    total += cur_r - cur_l
    pieces += 1
    print(total, pieces)


main()
