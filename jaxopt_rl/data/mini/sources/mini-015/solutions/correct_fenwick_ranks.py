# O(n log n): compress catalogue numbers to ranks; a Fenwick tree counts earlier books with a larger rank.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    a = list(map(int, data[1:1 + n]))
    rank = {v: i + 1 for i, v in enumerate(sorted(set(a)))}
    m = len(rank)
    tree = [0] * (m + 1)
    inversions = 0
    for seen, x in enumerate(a):
        r = rank[x]
        not_greater = 0
        i = r
        while i > 0:
            not_greater += tree[i]
            i &= i - 1
        inversions += seen - not_greater
        while r <= m:
            tree[r] += 1
            r += r & -r
    print(inversions)


main()
