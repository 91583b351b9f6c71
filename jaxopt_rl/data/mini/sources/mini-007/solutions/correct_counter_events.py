# O(n log n): net paint change per position in a dict, then a sweep over the sorted distinct positions.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    delta = {}
    for i in range(n):
        left, r = int(data[1 + 2 * i]), int(data[2 + 2 * i])
        delta[left] = delta.get(left, 0) + 1
        delta[r] = delta.get(r, 0) - 1
    depth = total = pieces = 0
    start = 0
    for x in sorted(delta):
        before = depth
        depth += delta[x]
        if before == 0 and depth > 0:
            start = x
            pieces += 1
        elif before > 0 and depth == 0:
            total += x - start
    print(total, pieces)


main()
