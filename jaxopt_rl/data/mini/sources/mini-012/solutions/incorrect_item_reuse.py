# BUG: the 1-D loop runs capacities upward, so an item already taken at c - w can be taken again (unbounded knapsack).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    best = [0] * (cap + 1)
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        for c in range(w, cap + 1):
            if best[c - w] + v > best[c]:
                best[c] = best[c - w] + v
    print(best[cap])


main()
