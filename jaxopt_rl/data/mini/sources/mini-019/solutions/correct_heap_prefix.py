# O(n log n): keeps every earlier prefix sum in a min-heap to find the smallest one before each day.
import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n = int(data[0])
    heap = [0]
    prefix = 0
    best = None
    for i in range(1, n + 1):
        prefix += int(data[i])
        candidate = prefix - heap[0]
        if best is None or candidate > best:
            best = candidate
        heapq.heappush(heap, prefix)
    print(best)


main()
