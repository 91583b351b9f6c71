# O(n log V), V = 2^30: Fenwick tree over the raw catalogue-number range kept in a dict (no compression, ~30 steps per update).
import sys

LOG = 30


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    size = 1 << LOG
    tree = {}
    inversions = 0
    for seen, x in enumerate(map(int, data[1:1 + n])):
        not_greater = 0
        i = x
        while i > 0:
            not_greater += tree.get(i, 0)
            i &= i - 1
        inversions += seen - not_greater
        i = x
        while i <= size:
            tree[i] = tree.get(i, 0) + 1
            i += i & -i
    print(inversions)


main()
