# BUG: indexes the Fenwick tree directly by catalogue number, assuming the numbers are a permutation of 1..n (larger numbers crash).
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    tree = [0] * (n + 1)
    inversions = 0
    for seen, x in enumerate(map(int, data[1:1 + n])):
        not_greater = 0
        i = x
        while i > 0:
            not_greater += tree[i]
            i &= i - 1
        inversions += seen - not_greater
        while x <= n:
            tree[x] += 1
            x += x & -x
    print(inversions)


main()
