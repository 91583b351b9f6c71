# BUG: a new ferry sets parent[a] = b on the islands themselves instead of linking their roots, so a's old links are cut off.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    parent = list(range(n + 1))

    def find(x):
        while parent[x] != x:
            x = parent[x]
        return x

    out = []
    pos = 2
    for _ in range(q):
        kind, a, b = data[pos], int(data[pos + 1]), int(data[pos + 2])
        pos += 3
        if kind == b"Q":
            out.append("YES" if find(a) == find(b) else "NO")
        elif find(a) != find(b):
            parent[a] = b
    sys.stdout.write("\n".join(out) + "\n")


main()
