# O((n + q) log n): bottom-up segment tree storing (uphill, downhill) sums per node, walked from both leaf ends per plan.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    size = 1
    while size < n:
        size *= 2
    up = [0] * (2 * size)
    down = [0] * (2 * size)
    for i in range(n):
        x = int(data[2 + i])
        if x > 0:
            up[size + i] = x
        else:
            down[size + i] = -x
    for v in range(size - 1, 0, -1):
        up[v] = up[2 * v] + up[2 * v + 1]
        down[v] = down[2 * v] + down[2 * v + 1]
    out = []
    pos = 2 + n
    for _ in range(q):
        a, b = int(data[pos]), int(data[pos + 1])
        pos += 2
        tree = up if a <= b else down
        lo, hi = (a, b) if a <= b else (b, a)
        # half-open leaf range [lo, hi)
        lo += size
        hi += size
        total = 0
        while lo < hi:
            if lo & 1:
                total += tree[lo]
                lo += 1
            if hi & 1:
                hi -= 1
                total += tree[hi]
            lo //= 2
            hi //= 2
        out.append(total)
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
