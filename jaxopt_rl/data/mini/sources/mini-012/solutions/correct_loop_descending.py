# O(n * W): classic 1-D DP, capacities visited from high to low in an explicit Python loop (index arithmetic per cell).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    best = [0] * (cap + 1)
    for i in range(n):
        w, v = int(data[2 + 2 * i]), int(data[3 + 2 * i])
        for c in range(cap, w - 1, -1):
            cand = best[c - w] + v
            if cand > best[c]:
                best[c] = cand
    print(best[cap])


main()
