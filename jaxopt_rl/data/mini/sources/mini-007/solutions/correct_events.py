# O(n log n): 2n start/end events sorted (starts before ends at equal positions); paint depth tracks covered length and pieces.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    events = []
    for i in range(n):
        events.append((int(data[1 + 2 * i]), -1))
        events.append((int(data[2 + 2 * i]), 1))
    events.sort()
    depth = total = pieces = 0
    start = 0
    for x, kind in events:
        if kind == -1:
            if depth == 0:
                start = x
                pieces += 1
            depth += 1
        else:
            depth -= 1
            if depth == 0:
                total += x - start
    print(total, pieces)


main()
