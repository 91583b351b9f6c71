# BUG: answers queries offline in order of their right end but prints them in that order, not in input order.
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
    order = sorted(range(len(queries)), key=lambda i: queries[i][1])
    out = []
    starts, gcds = [], []
    qi = 0
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
        while qi < len(order) and queries[order[qi]][1] == r:
            left = queries[order[qi]][0]
            out.append(gcds[bisect.bisect_right(starts, left) - 1])
            qi += 1
    sys.stdout.write("\n".join(map(str, out)) + "\n")


main()
