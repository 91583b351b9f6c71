# O(n log n): sort by start; on overlap keep whichever of the two meetings ends first (exchange argument).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    meetings = sorted(zip(map(int, data[1 : 2 * n + 1 : 2]), map(int, data[2 : 2 * n + 2 : 2])))
    count, last_end = 0, -1
    for s, e in meetings:
        if s >= last_end:
            count += 1
            last_end = e
        elif e < last_end:
            last_end = e  # replace the last chosen meeting by this one, which ends sooner
    print(count)


main()
