# O(n log^2 n): divide and conquer; cross pairs counted with bisect of each right-half book into the sorted left half.
import sys
from bisect import bisect_right


def count(a):
    """Returns (sorted copy of a, inversions in a)."""
    if len(a) <= 16:
        inv = sum(1 for i in range(len(a)) for j in range(i + 1, len(a)) if a[i] > a[j])
        return sorted(a), inv
    mid = len(a) // 2
    left, x = count(a[:mid])
    right, y = count(a[mid:])
    size = len(left)
    cross = sum(size - bisect_right(left, v) for v in right)
    return sorted(left + right), x + y + cross


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    print(count(list(map(int, data[1:1 + n])))[1])


main()
