# O(n) in C loops: prefix sums and running prefix minima with itertools.accumulate, best difference via map.
import sys
from itertools import accumulate
from operator import sub


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    prefix = [0]
    prefix.extend(accumulate(map(int, data[1 : n + 1])))
    running_min = accumulate(prefix[:-1], min)
    print(max(map(sub, prefix[1:], running_min)))


main()
