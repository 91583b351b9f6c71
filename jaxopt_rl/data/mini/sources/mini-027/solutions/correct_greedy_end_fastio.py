# O(n log n): sort by end time, greedily take every meeting that starts no earlier than the last taken end; bulk read.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    starts = map(int, data[1 : 2 * n + 1 : 2])
    ends = map(int, data[2 : 2 * n + 2 : 2])
    count, free_at = 0, -1
    for e, s in sorted(zip(ends, starts)):
        if s >= free_at:
            count += 1
            free_at = e
    print(count)


main()
