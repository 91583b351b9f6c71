# O((n + q) log A): offline sweep over right ends keeping the O(log A) distinct gcds of ranges ending there.
import bisect
import sys
from math import gcd


def read():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    values = [int(x) for x in data[2 : 2 + n]]
    queries = [(int(data[2 + n + 2 * i]), int(data[3 + n + 2 * i])) for i in range(q)]
    return n, values, queries


def main():
    n, values, queries = read()
    by_right = [[] for _ in range(n + 1)]
    for idx, (left, r) in enumerate(queries):
        by_right[r].append((left, idx))
    answers = [0] * len(queries)
    # starts[j], gcds[j]: ranges [s, r] with s in [starts[j], starts[j+1]) all have gcd gcds[j].
    starts, gcds = [], []
    for r in range(1, n + 1):
        v = values[r - 1]
        new_starts, new_gcds = [], []
        for s, g in zip(starts, gcds):
            g = gcd(g, v)
            if new_gcds and new_gcds[-1] == g:
                continue
            new_starts.append(s)
            new_gcds.append(g)
        if not new_gcds or new_gcds[-1] != v:
            new_starts.append(r)
            new_gcds.append(v)
        starts, gcds = new_starts, new_gcds
        for left, idx in by_right[r]:
            answers[idx] = gcds[bisect.bisect_right(starts, left) - 1]
    sys.stdout.write("\n".join(map(str, answers)) + "\n")


main()
