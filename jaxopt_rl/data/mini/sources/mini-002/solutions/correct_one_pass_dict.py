# O(n): single pass with a dict of weights seen so far; each cookie pairs with every earlier cookie of weight W - a_i.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, w = int(data[0]), int(data[1])
    seen = {}
    pairs = 0
    for i in range(2, 2 + n):
        x = int(data[i])
        pairs += seen.get(w - x, 0)
        seen[x] = seen.get(x, 0) + 1
    print(pairs)


main()
