# O(R * C): level-synchronous BFS on the padded flat grid; each level is a plain list, walls and visited cells share one bytearray.
import sys


def main():
    data = sys.stdin.buffer.read().split()
    r, c = int(data[0]), int(data[1])
    width = c + 2
    rows = [b"#" * width] + [b"#" + data[2 + i] + b"#" for i in range(r)] + [b"#" * width]
    cells = bytearray(b"".join(rows))
    start, target = cells.index(b"S"), cells.index(b"T")
    blocked = bytearray(x == ord("#") for x in cells)
    blocked[start] = 1
    frontier = [start]
    steps = 0
    while frontier:
        if blocked[target] and target in frontier:
            print(steps)
            return
        nxt = []
        for u in frontier:
            for v in (u - 1, u + 1, u - width, u + width):
                if not blocked[v]:
                    blocked[v] = 1
                    nxt.append(v)
        frontier = nxt
        steps += 1
    print(-1)


main()
