# O(n log n): compress the endpoints, add +1/-1 on a difference array over elementary gaps, then scan the prefix sums.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    ends = list(map(int, data[1:1 + 2 * n]))
    xs = sorted(set(ends))
    index = {x: i for i, x in enumerate(xs)}
    diff = [0] * (len(xs) + 1)
    for i in range(0, 2 * n, 2):
        diff[index[ends[i]]] += 1
        diff[index[ends[i + 1]]] -= 1
    total = pieces = 0
    depth = 0
    was_painted = False
    for i in range(len(xs) - 1):
        depth += diff[i]
        painted = depth > 0
        if painted:
            total += xs[i + 1] - xs[i]
            if not was_painted:
                pieces += 1
        was_painted = painted
    print(total, pieces)


main()
