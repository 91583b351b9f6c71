# O(N + D log k): Counter, then heapq.nsmallest keeps only the k best (-count, word) pairs.
import heapq
import sys
from collections import Counter


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    counts = Counter(data[2 : 2 + n])
    ranked = heapq.nsmallest(k, ((-c, w) for w, c in counts.items()))
    sys.stdout.write("".join(f"{w.decode()} {-c}\n" for c, w in ranked))


main()
