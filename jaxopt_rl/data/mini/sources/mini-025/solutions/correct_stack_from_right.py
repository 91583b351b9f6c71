# O(n): scans right to left keeping a stack of candidate taller buildings (heights strictly decreasing from bottom).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = [int(x) for x in data[1 : n + 1]]
    answer = [0] * n
    candidates = []
    for i in range(n - 1, -1, -1):
        h = heights[i]
        while candidates and heights[candidates[-1]] <= h:
            candidates.pop()
        answer[i] = candidates[-1] + 1 if candidates else 0
        candidates.append(i)
    print(" ".join(map(str, answer)))


main()
