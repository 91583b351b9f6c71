# O(n): collections.Counter of weights (built in C), then one pass over the distinct weights.
import sys
from collections import Counter


def main():
    data = sys.stdin.buffer.read().split()
    n, w = int(data[0]), int(data[1])
    count = Counter(map(int, data[2:2 + n]))
    pairs = 0
    for x, c in count.items():
        y = w - x
        if x < y:
            pairs += c * count.get(y, 0)
        elif x == y:
            pairs += c * (c - 1) // 2
    print(pairs)


main()
