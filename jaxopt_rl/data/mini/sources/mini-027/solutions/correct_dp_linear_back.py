# O(n * d), d = overlap depth: the same DP, but the last compatible meeting is found by walking backwards.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    meetings = sorted(zip(map(int, data[2 : 2 * n + 2 : 2]), map(int, data[1 : 2 * n + 1 : 2])))
    best = [0] * (n + 1)
    for i in range(1, n + 1):
        s = meetings[i - 1][1]
        j = i - 1
        while j > 0 and meetings[j - 1][0] > s:
            j -= 1
        best[i] = max(best[i - 1], best[j] + 1)
    print(best[n])


main()
