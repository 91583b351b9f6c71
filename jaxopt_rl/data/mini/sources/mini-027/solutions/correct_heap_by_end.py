# O(n log n): a heap of (end, start) pairs popped in order of end time instead of a sort.
import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heap = [(int(data[2 + 2 * i]), int(data[1 + 2 * i])) for i in range(n)]
    heapq.heapify(heap)
    count, free_at = 0, -1
    while heap:
        e, s = heapq.heappop(heap)
        if s >= free_at:
            count += 1
            free_at = e
    print(count)


main()
