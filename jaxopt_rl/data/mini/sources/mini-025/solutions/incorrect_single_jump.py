# BUG: follows the "next taller" link only once ("if" instead of "while"), so long chains of shorter buildings are not skipped.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heights = [int(x) for x in data[1 : n + 1]]
    nxt = [n] * n
    for i in range(n - 2, -1, -1):
        j = i + 1
        if j < n and heights[j] <= heights[i]:
            j = nxt[j]
        nxt[i] = j
    print(" ".join(str(j + 1) if j < n else "0" for j in nxt))


main()
