# BUG: Kadane with best and the running sum floored at 0 allows an empty run, so an all-negative input prints 0.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    best = cur = 0
    for token in data[1 : n + 1]:
        cur = max(0, cur + int(token))
        best = max(best, cur)
    print(best)


main()
