# O(k * S) big-integer additions: exact counts without any modulo (numbers grow to hundreds of digits), reduced only at the end.
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    k, amount = int(data[0]), int(data[1])
    coins = [int(x) for x in data[2 : 2 + k]]
    ways = [0] * (amount + 1)
    ways[0] = 1
    for c in coins:
        for j in range(c, amount + 1):
            ways[j] += ways[j - c]
    print(ways[amount] % MOD)


main()
