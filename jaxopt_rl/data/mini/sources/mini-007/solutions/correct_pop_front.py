# O(n^2) memmove: sorted stretches consumed with list.pop(0) (each pop shifts the whole remaining list), otherwise a plain sweep.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    pending = sorted([int(data[1 + 2 * i]), int(data[2 + 2 * i])] for i in range(n))
    total = pieces = 0
    while pending:
        left, right = pending.pop(0)
        while pending and pending[0][0] <= right:
            right = max(right, pending.pop(0)[1])
        total += right - left
        pieces += 1
    print(total, pieces)


main()
