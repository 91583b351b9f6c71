# BUG: depth-first search reports the length of the first route it finds to T, which is only the shortest when the floor has no alternative routes.
import sys


def main():
    lines = sys.stdin.read().split()
    r, c = int(lines[0]), int(lines[1])
    grid = lines[2:2 + r]
    for i, row in enumerate(grid):
        if "S" in row:
            start = (i, row.index("S"))
    seen = {start}
    stack = [(start, 0)]
    while stack:
        (y, x), d = stack.pop()
        if grid[y][x] == "T":
            print(d)
            return
        for ny, nx in ((y + 1, x), (y - 1, x), (y, x + 1), (y, x - 1)):
            if 0 <= ny < r and 0 <= nx < c and grid[ny][nx] != "#" and (ny, nx) not in seen:
                seen.add((ny, nx))
                stack.append(((ny, nx), d + 1))
    print(-1)


main()
