# O(R * C): BFS with a deque over a flattened grid padded by a wall border, so neighbours are index offsets with no bounds checks.
import sys
from collections import deque


def main():
    data = sys.stdin.buffer.read().split()
    r, c = int(data[0]), int(data[1])
    width = c + 2
    cells = bytearray(b"#" * width)
    for i in range(r):
        cells += b"#" + data[2 + i] + b"#"
    cells += b"#" * width
    start, target = cells.index(b"S"), cells.index(b"T")
    dist = [-1] * len(cells)
    dist[start] = 0
    queue = deque([start])
    wall = ord("#")
    while queue:
        u = queue.popleft()
        if u == target:
            break
        du = dist[u] + 1
        for v in (u - 1, u + 1, u - width, u + width):
            if dist[v] < 0 and cells[v] != wall:
                dist[v] = du
                queue.append(v)
    print(dist[target])


main()
