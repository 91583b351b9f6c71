# O(n + q): prefix sums of uphill and downhill parts (itertools.accumulate), whole input read at once, one joined write.
import sys
from itertools import accumulate


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    d = list(map(int, data[2:2 + n]))
    up = [0, *accumulate(x if x > 0 else 0 for x in d)]
    down = [0, *accumulate(-x if x < 0 else 0 for x in d)]
    ends = list(map(int, data[2 + n:2 + n + 2 * q]))
    out = []
    for a, b in zip(ends[0::2], ends[1::2]):
        out.append(up[b] - up[a] if a <= b else down[a] - down[b])
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
