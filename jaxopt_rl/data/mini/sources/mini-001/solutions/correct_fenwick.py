# O((n + q) log n): two Fenwick (binary indexed) trees, one for uphill and one for downhill parts, queried by prefix.
import sys


def build(values):
    tree = [0, *values]
    n = len(values)
    for i in range(1, n + 1):
        j = i + (i & -i)
        if j <= n:
            tree[j] += tree[i]
    return tree


def prefix(tree, i):
    total = 0
    while i > 0:
        total += tree[i]
        i &= i - 1
    return total


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    d = list(map(int, data[2:2 + n]))
    up = build([x if x > 0 else 0 for x in d])
    down = build([-x if x < 0 else 0 for x in d])
    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        if a <= b:
            out.append(prefix(up, b) - prefix(up, a))
        else:
            out.append(prefix(down, a) - prefix(down, b))
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
