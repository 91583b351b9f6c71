# BUG: bisect_right lets equal brightness extend a run, so it computes the longest NON-DECREASING subsequence.
import sys
from bisect import bisect_right


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tails = []
    for x in map(int, data[1:1 + n]):
        k = bisect_right(tails, x)
        if k == len(tails):
            tails.append(x)
        else:
            tails[k] = x
    print(len(tails))


main()
