# O(k * S) time and memory: full 2-D table ways[i][j] over coin prefixes, every cell written.
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    k, amount = int(data[0]), int(data[1])
    coins = [int(x) for x in data[2 : 2 + k]]
    table = [[0] * (amount + 1) for _ in range(k + 1)]
    table[0][0] = 1
    for i in range(1, k + 1):
        c = coins[i - 1]
        row, above = table[i], table[i - 1]
        for j in range(amount + 1):
            value = above[j]
            if j >= c:
                value += row[j - c]
            row[j] = value % MOD
    print(table[k][amount])


main()
