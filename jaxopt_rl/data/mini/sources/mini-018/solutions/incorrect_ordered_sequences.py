# BUG: amount in the outer loop and coins in the inner loop counts ordered sequences of coins, not multisets.
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    k, amount = int(data[0]), int(data[1])
    coins = [int(x) for x in data[2 : 2 + k]]
    ways = [0] * (amount + 1)
    ways[0] = 1
    for j in range(1, amount + 1):
        for c in coins:
            if c <= j:
                ways[j] = (ways[j] + ways[j - c]) % MOD
    print(ways[amount])


main()
