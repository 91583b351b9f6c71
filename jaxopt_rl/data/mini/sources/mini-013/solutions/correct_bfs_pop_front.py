# O(R * C * F) memmove, F = frontier size: BFS whose queue is a Python list consumed with pop(0) (every pop shifts the list).
import sys


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
    queue = [start]
    wall = ord("#")
    while queue:
        u = queue.pop(0)
        if u == target:
            break
        for v in (u - 1, u + 1, u - width, u + width):
            if dist[v] < 0 and cells[v] != wall:
                dist[v] = dist[u] + 1
                queue.append(v)
    print(dist[target])


main()
