# O(R * C): BFS with a deque of (row, col) tuples on a 2-D list of strings, with explicit bounds checks for every neighbour.
import sys
from collections import deque


def main():
    lines = sys.stdin.read().split()
    r, c = int(lines[0]), int(lines[1])
    grid = lines[2:2 + r]
    for i, row in enumerate(grid):
        if "S" in row:
            start = (i, row.index("S"))
    dist = [[-1] * c for _ in range(r)]
    dist[start[0]][start[1]] = 0
    queue = deque([start])
    while queue:
        y, x = queue.popleft()
        if grid[y][x] == "T":
            print(dist[y][x])
            return
        for dy, dx in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            ny, nx = y + dy, x + dx
            if 0 <= ny < r and 0 <= nx < c and grid[ny][nx] != "#" and dist[ny][nx] < 0:
                dist[ny][nx] = dist[y][x] + 1
                queue.append((ny, nx))
    print(-1)


main()
