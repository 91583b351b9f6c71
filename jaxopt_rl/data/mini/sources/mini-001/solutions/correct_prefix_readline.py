# O(n + q): prefix sums built in a Python loop, but every plan is read with its own sys.stdin.readline() call.
import sys


def main():
    readline = sys.stdin.readline
    n, q = map(int, readline().split())
    d = list(map(int, readline().split()))
    up = [0] * (n + 1)
    down = [0] * (n + 1)
    for i in range(n):
        x = d[i]
        up[i + 1] = up[i] + (x if x > 0 else 0)
        down[i + 1] = down[i] + (-x if x < 0 else 0)
    out = []
    for _ in range(q):
        a, b = map(int, readline().split())
        if a <= b:
            out.append(up[b] - up[a])
        else:
            out.append(down[a] - down[b])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
