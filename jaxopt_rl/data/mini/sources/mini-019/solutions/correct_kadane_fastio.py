# O(n): Kadane's scan with plain comparisons, whole input read at once.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    best = cur = int(data[1])
    for token in data[2 : n + 1]:
        x = int(token)
        cur = cur + x if cur > 0 else x
        if cur > best:
            best = cur
    print(best)


main()
