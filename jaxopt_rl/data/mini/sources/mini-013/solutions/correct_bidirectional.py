# O(R * C) worst case, often much less: bidirectional BFS growing the smaller of two frontiers (from S and from T) until they meet.
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
    wall = ord("#")
    dist = [{start: 0}, {target: 0}]
    frontiers = [[start], [target]]
    while frontiers[0] and frontiers[1]:
        side = 0 if len(frontiers[0]) <= len(frontiers[1]) else 1
        mine, other = dist[side], dist[1 - side]
        nxt = []
        best = None
        for u in frontiers[side]:
            du = mine[u] + 1
            for v in (u - 1, u + 1, u - width, u + width):
                if cells[v] == wall or v in mine:
                    continue
                if v in other:
                    total = du + other[v]
                    if best is None or total < best:
                        best = total
                mine[v] = du
                nxt.append(v)
        if best is not None:
            print(best)
            return
        frontiers[side] = nxt
    print(-1)


main()
