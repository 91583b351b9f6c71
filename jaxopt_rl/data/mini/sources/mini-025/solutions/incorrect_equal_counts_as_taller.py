# BUG: pops the stack while the waiting building is not taller (<=), so a building of EQUAL height is reported as taller.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = list(map(int, data[1 : n + 1]))
    answer = [0] * n
    waiting = []
    for i, h in enumerate(heights):
        while waiting and heights[waiting[-1]] <= h:
            answer[waiting.pop()] = i + 1
        waiting.append(i)
    print(" ".join(map(str, answer)))


main()
