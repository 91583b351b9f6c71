# BUG: treats a meeting starting exactly when the previous one ends as overlapping (strict > instead of >=).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    meetings = sorted(zip(map(int, data[2 : 2 * n + 2 : 2]), map(int, data[1 : 2 * n + 1 : 2])))
    count, free_at = 0, -1
    for e, s in meetings:
        if s > free_at:
            count += 1
            free_at = e
    print(count)


main()
