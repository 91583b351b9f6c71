# O(k * n): DP over trucks; the best last split point only moves right as the prefix grows, so one pointer per layer.
import sys
from itertools import accumulate


def read():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    return n, k, [int(x) for x in data[2 : 2 + n]]


def main():
    n, k, weights = read()
    k = min(k, n)
    prefix = [0, *accumulate(weights)]
    best = prefix[:]  # best[i]: minimal largest load for the first i crates with the current trucks
    for _ in range(k - 1):
        new = [0] * (n + 1)
        j = 0
        for i in range(1, n + 1):
            # cost(j) = max(best[j], prefix[i] - prefix[j]) is unimodal in j; advance while it improves.
            while j + 1 < i and max(best[j + 1], prefix[i] - prefix[j + 1]) <= max(
                best[j], prefix[i] - prefix[j]
            ):
                j += 1
            new[i] = max(best[j], prefix[i] - prefix[j])
        best = new
    print(best[n])


main()
