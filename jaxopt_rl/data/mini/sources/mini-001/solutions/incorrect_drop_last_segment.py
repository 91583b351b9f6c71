# BUG: the prefix loop runs over range(n - 1), so the last segment is never counted (plans reaching checkpoint n are short).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    d = list(map(int, data[2:2 + n]))
    up = [0] * (n + 1)
    down = [0] * (n + 1)
    for i in range(n - 1):
        up[i + 1] = up[i] + max(d[i], 0)
        down[i + 1] = down[i] + max(-d[i], 0)
    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        out.append(up[b] - up[a] if a <= b else down[a] - down[b])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
