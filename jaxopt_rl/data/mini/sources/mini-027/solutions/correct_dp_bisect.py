# O(n log n): DP over meetings sorted by end; best[i] = max(best[i-1], 1 + best[last compatible]) found by bisect.
import bisect
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    meetings = sorted(zip(map(int, data[2 : 2 * n + 2 : 2]), map(int, data[1 : 2 * n + 1 : 2])))
    ends = [e for e, _ in meetings]
    best = [0] * (n + 1)  # best[i]: answer using the first i meetings by end time
    for i, (_end, s) in enumerate(meetings, 1):
        j = bisect.bisect_right(ends, s, 0, i - 1)  # meetings ending at or before s
        best[i] = max(best[i - 1], best[j] + 1)
    print(best[n])


main()
