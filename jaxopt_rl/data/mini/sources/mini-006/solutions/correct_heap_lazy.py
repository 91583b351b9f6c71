# O(n log n): max-heap of (-reading, index); entries that slid out of the window are discarded when they reach the top.
import heapq
import sys


def main():
    data = sys.stdin.buffer.read().split()
    n, k = int(data[0]), int(data[1])
    t = list(map(int, data[2:2 + n]))
    heap = []
    out = []
    for i, x in enumerate(t):
        heapq.heappush(heap, (-x, i))
        if i >= k - 1:
            while heap[0][1] <= i - k:
                heapq.heappop(heap)
            out.append(-heap[0][0])
    print(" ".join(map(str, out)))


main()
