# BUG: greedy by earliest START time; one long early meeting can block several short ones.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    meetings = sorted(zip(map(int, data[1 : 2 * n + 1 : 2]), map(int, data[2 : 2 * n + 2 : 2])))
    count, free_at = 0, -1
    for s, e in meetings:
        if s >= free_at:
            count += 1
            free_at = e
    print(count)


main()
