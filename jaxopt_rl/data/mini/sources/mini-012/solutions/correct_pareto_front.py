# O(n * P), P = Pareto-optimal (weight, value) pairs: merge the front with its item-shifted copy and drop dominated pairs.
import sys
from heapq import merge


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    front = [(0, 0)]  # increasing weight and strictly increasing value
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        shifted = [(a + w, b + v) for a, b in front if a + w <= cap]
        new = []
        top = -1
        for a, b in merge(front, shifted):
            if b > top:
                if new and new[-1][0] == a:
                    new[-1] = (a, b)
                else:
                    new.append((a, b))
                top = b
        front = new
    print(front[-1][1])


main()
