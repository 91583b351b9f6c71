# BUG: prefix sums indexed by segment (0-based) and queried at checkpoint - 1, so checkpoint 0 reads index -1, which Python silently wraps to the whole-trail total.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    d = list(map(int, data[2:2 + n]))
    up = []
    down = []
    su = sd = 0
    for x in d:
        su += max(x, 0)
        sd += max(-x, 0)
        up.append(su)
        down.append(sd)
    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        if a == b:
            out.append(0)
        elif a < b:
            out.append(up[b - 1] - up[a - 1])
        else:
            out.append(down[a - 1] - down[b - 1])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
