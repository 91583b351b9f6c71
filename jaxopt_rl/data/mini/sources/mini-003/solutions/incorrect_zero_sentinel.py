# BUG: assumes brightness is positive and keeps a 0 sentinel in tails; a non-positive lantern overwrites the sentinel and is not counted.
import sys
from bisect import bisect_left


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tails = [0]
    for x in map(int, data[1:1 + n]):
        k = bisect_left(tails, x)
        if k == len(tails):
            tails.append(x)
        else:
            tails[k] = x
    print(len(tails) - 1)


main()
