# O((n + q) sqrt n): Mo's algorithm; queries ordered by (block of l, r), a window slides with per-species counters.
import sys
from math import isqrt


def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    ids = {}
    s = [ids.setdefault(x, len(ids)) for x in data[2:2 + n]]
    lefts = [int(x) - 1 for x in data[2 + n:2 + n + 2 * q:2]]
    rights = [int(x) for x in data[3 + n:3 + n + 2 * q:2]]
    block = max(1, n // max(1, isqrt(q)))
    order = sorted(range(q), key=lambda j: (lefts[j] // block,
                                            rights[j] if (lefts[j] // block) % 2 == 0
                                            else -rights[j]))
    count = [0] * len(ids)
    distinct = 0
    lo = hi = 0  # window is s[lo:hi]
    answers = [0] * q
    for j in order:
        left, right = lefts[j], rights[j]
        while hi < right:
            x = s[hi]
            if count[x] == 0:
                distinct += 1
            count[x] += 1
            hi += 1
        while lo > left:
            lo -= 1
            x = s[lo]
            if count[x] == 0:
                distinct += 1
            count[x] += 1
        while hi > right:
            hi -= 1
            x = s[hi]
            count[x] -= 1
            if count[x] == 0:
                distinct -= 1
        while lo < left:
            x = s[lo]
            count[x] -= 1
            if count[x] == 0:
                distinct -= 1
            lo += 1
        answers[j] = distinct
    sys.stdout.write("\n".join(map(str, answers)) + "\n")


main()
