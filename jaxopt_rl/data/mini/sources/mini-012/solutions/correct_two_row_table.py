# O(n * W): textbook 2-D recurrence kept as two full rows (previous item, current item) with an explicit take / skip choice per cell.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    prev = [0] * (cap + 1)
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        cur = [0] * (cap + 1)
        for c in range(cap + 1):
            skip = prev[c]
            if c >= w:
                take = prev[c - w] + v
                cur[c] = take if take > skip else skip
            else:
                cur[c] = skip
        prev = cur
    print(prev[cap])


main()
