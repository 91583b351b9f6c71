# O(n log n): sparse table of range maxima, then for each building a binary descent to the first taller one.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = [int(x) for x in data[1 : n + 1]]
    table = [heights]  # table[k][i] = max of heights[i : i + 2^k]
    step = 1
    while 2 * step <= n:
        prev = table[-1]
        table.append(list(map(max, prev[: n - 2 * step + 1], prev[step : n - step + 1])))
        step *= 2
    answer = []
    for i in range(n):
        h = heights[i]
        pos = i + 1
        # Jump over blocks whose maximum is not taller, largest blocks first.
        for k in range(len(table) - 1, -1, -1):
            row = table[k]
            if pos < len(row) and row[pos] <= h:
                pos += 1 << k
        while pos < n and heights[pos] <= h:
            pos += 1
        answer.append(pos + 1 if pos < n else 0)
    print(" ".join(map(str, answer)))


main()
