# BUG: answers max(prefix) - min(prefix over earlier days) without requiring the minimum to come before the maximum.
import sys
from itertools import accumulate


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    prefix = list(accumulate(map(int, data[1 : n + 1])))
    print(max(prefix) - min([0, *prefix[:-1]]))


main()
