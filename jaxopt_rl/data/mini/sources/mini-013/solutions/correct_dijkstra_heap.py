# O(R * C * log(R * C)): Dijkstra with heapq on unit-weight moves (a heap where a FIFO queue would do), stale entries skipped.
import heapq
import sys


def main():
    lines = sys.stdin.read().split()
    r, c = int(lines[0]), int(lines[1])
    grid = lines[2:2 + r]
    for i, row in enumerate(grid):
        if "S" in row:
            start = (i, row.index("S"))
        if "T" in row:
            target = (i, row.index("T"))
    best = {start: 0}
    heap = [(0, start)]
    while heap:
        d, (y, x) = heapq.heappop(heap)
        if (y, x) == target:
            print(d)
            return
        if d > best[(y, x)]:
            continue
        for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
            if (0 <= ny < r and 0 <= nx < c and grid[ny][nx] != "#"
                    and d + 1 < best.get((ny, nx), 1 << 60)):
                best[(ny, nx)] = d + 1
                heapq.heappush(heap, (d + 1, (ny, nx)))
    print(-1)


main()
