# O(n): monotonic stack of indices still waiting for a taller building, bulk read and one join.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = list(map(int, data[1 : n + 1]))
    answer = [0] * n
    waiting = []
    for i, h in enumerate(heights):
        while waiting and heights[waiting[-1]] < h:
            answer[waiting.pop()] = i + 1
        waiting.append(i)
    print(" ".join(map(str, answer)))


main()
