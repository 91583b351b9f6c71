# O(k * S) with fewer interpreter steps: for coins >= 16 the update is applied c entries at a time with list slices.
import sys

MOD = 10**9 + 7


def main():
    data = sys.stdin.buffer.read().split()
    k, amount = int(data[0]), int(data[1])
    coins = [int(x) for x in data[2 : 2 + k]]
    ways = [0] * (amount + 1)
    ways[0] = 1
    for c in coins:
        if c > amount:
            continue
        if c < 16:  # short blocks would cost more in slicing than they save
            for j in range(c, amount + 1):
                ways[j] = (ways[j] + ways[j - c]) % MOD
            continue
        # Entries j in [start, start + c) only depend on [start - c, start), already final.
        for start in range(c, amount + 1, c):
            stop = min(start + c, amount + 1)
            prev = ways[start - c : stop - c]
            cur = ways[start:stop]
            ways[start:stop] = [(a + b) % MOD for a, b in zip(cur, prev)]
    print(ways[amount])


main()
