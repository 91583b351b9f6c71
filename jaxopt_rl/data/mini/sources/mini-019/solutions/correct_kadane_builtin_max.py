# O(n): Kadane's scan written with two max() builtin calls per element (function-call overhead).
import sys


def main():
    values = list(map(int, sys.stdin.read().split()))[1:]
    best = cur = values[0]
    for x in values[1:]:
        cur = max(x, cur + x)
        best = max(best, cur)
    print(best)


main()
