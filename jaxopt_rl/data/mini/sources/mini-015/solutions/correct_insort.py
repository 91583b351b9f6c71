# O(n log n + I) memmove, I = the answer: insert each book into a sorted list (bisect.insort); the books it jumps over are its inversions.
import sys
from bisect import bisect_right, insort


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    shelf = []
    inversions = 0
    for x in map(int, data[1:1 + n]):
        inversions += len(shelf) - bisect_right(shelf, x)
        insort(shelf, x)
    print(inversions)


main()
