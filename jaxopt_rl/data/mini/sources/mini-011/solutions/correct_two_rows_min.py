# O(n * m): two-row DP using the built-in min() of three candidates per cell (a function call for every cell).
import sys


def main():
    lines = sys.stdin.read().split()
    a, b = lines[0], lines[1]
    m = len(b)
    prev = list(range(m + 1))
    for i in range(1, len(a) + 1):
        cur = [i] + [0] * m
        for j in range(1, m + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost)
        prev = cur
    print(prev[m])


main()
