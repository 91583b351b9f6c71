# BUG: greedy by value per unit of weight (the fractional-knapsack rule), which is not optimal when items cannot be split.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, cap = int(data[0]), int(data[1])
    items = [(int(data[2 + 2 * i]), int(data[3 + 2 * i])) for i in range(n)]
    items.sort(key=lambda item: item[1] / item[0], reverse=True)
    room, total = cap, 0
    for w, v in items:
        if w <= room:
            room -= w
            total += v
    print(total)


main()
