# O(n * run): for every building scan to the right until a taller one; quadratic on long descending stretches.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = [int(x) for x in data[1 : n + 1]]
    answer = []
    for i in range(n):
        h = heights[i]
        found = 0
        for j in range(i + 1, n):
            if heights[j] > h:
                found = j + 1
                break
        answer.append(found)
    print(" ".join(map(str, answer)))


main()
