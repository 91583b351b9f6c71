# O(k * S) with tuple hashing: two DP rows stored in one dict keyed by (row parity, amount).
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    k, amount = int(data[0]), int(data[1])
    coins = [int(x) for x in data[2 : 2 + k]]
    ways = {(0, j): 0 for j in range(amount + 1)}
    ways[(0, 0)] = 1
    for i, c in enumerate(coins, 1):
        cur, prev = i & 1, (i - 1) & 1
        for j in range(amount + 1):
            value = ways[(prev, j)]
            if j >= c:
                value += ways[(cur, j - c)]
            ways[(cur, j)] = value % MOD
    print(ways[(len(coins) & 1, amount)])


main()
