# O(n log k): sparse table of maxima over power-of-two lengths up to k; each window is two overlapping lookups.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    level = list(map(int, data[2:2 + n]))
    length = 1
    while 2 * length <= k:
        nxt = level[length:]
        level = [a if a > b else b for a, b in zip(level, nxt)]
        length *= 2
    # level[i] = max(t[i : i + length]); a window of k is covered by two such ranges
    shift = k - length
    out = [a if a > b else b for a, b in zip(level, level[shift:shift + n - k + 1])]
    print(" ".join(map(str, out)))


main()
