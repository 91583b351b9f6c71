"""Input generator for mini-013 (warehouse robot: BFS shortest path on a grid with walls)."""
import random

SIDE_MAX = 1000


def _render(rows):
    return f"{len(rows)} {len(rows[0])}\n" + "".join(r + "\n" for r in rows)


def _place(cells, r, c, rng, far=False):
    """Put S and T on two distinct cells (overwriting walls). With `far`, S goes near the top-left
    corner and T near the bottom-right one, so the robot has to cross the whole floor."""
    while True:
        if far:
            s = (rng.randrange(max(1, r // 10)), rng.randrange(max(1, c // 10)))
            t = (r - 1 - rng.randrange(max(1, r // 10)), c - 1 - rng.randrange(max(1, c // 10)))
        else:
            s = (rng.randrange(r), rng.randrange(c))
            t = (rng.randrange(r), rng.randrange(c))
        if s != t:
            break
    cells[s[0]][s[1]] = "S"
    cells[t[0]][t[1]] = "T"


def _random_grid(r, c, density, rng, far=False):
    cells = [["#" if rng.random() < density else "." for _ in range(c)] for _ in range(r)]
    _place(cells, r, c, rng, far)
    return ["".join(row) for row in cells]


def _maze(r, c, rng, far=False):
    """A perfect maze on the odd cells (carved by randomized DFS), optionally with extra holes."""
    cells = [["#"] * c for _ in range(r)]
    start = (0, 0)
    cells[0][0] = "."
    stack = [start]
    while stack:
        y, x = stack[-1]
        options = [(y + dy, x + dx, y + dy // 2, x + dx // 2)
                   for dy, dx in ((2, 0), (-2, 0), (0, 2), (0, -2))
                   if 0 <= y + dy < r and 0 <= x + dx < c and cells[y + dy][x + dx] == "#"]
        if not options:
            stack.pop()
            continue
        ny, nx, my, mx = rng.choice(options)
        cells[my][mx] = cells[ny][nx] = "."
        stack.append((ny, nx))
    holes = rng.choice([0, r * c // 50])
    for _ in range(holes):
        cells[rng.randrange(r)][rng.randrange(c)] = "."
    if far:  # the carved cells have even coordinates: pick the far corners of the carving
        cells[0][0] = "S"
        cells[(r - 1) // 2 * 2][(c - 1) // 2 * 2] = "T"
        if r * c == 1 or (r - 1) // 2 * 2 == 0 == (c - 1) // 2 * 2:
            _place(cells, r, c, rng)
    else:
        free = [(y, x) for y in range(r) for x in range(c) if cells[y][x] == "."]
        if len(free) < 2:
            _place(cells, r, c, rng)
        else:
            (sy, sx), (ty, tx) = rng.sample(free, 2)
            cells[sy][sx], cells[ty][tx] = "S", "T"
    return ["".join(row) for row in cells]


def _grid(r, c, rng, far=False):
    shape = rng.randrange(3)
    if shape == 0:
        return _maze(r, c, rng, far)
    # wall densities below the percolation threshold (~0.41) keep the floor mostly connected;
    # 0.45 gives small islands and many unreachable docks
    density = rng.choice([0.0, 0.2, 0.35]) if shape == 1 or far else 0.45
    return _random_grid(r, c, density, rng, far)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # two cells
            return _render(["ST"] if rng.random() < 0.5 else ["T", "S"])
        if case == 1:  # one long row or column
            n = rng.randint(2, 30)
            row = ["."] * n
            row[0], row[-1] = "S", "T"
            if rng.random() < 0.3:
                row[rng.randint(1, n - 2)] = "#" if n > 2 else "."
            return _render(["".join(row)]) if rng.random() < 0.5 else _render(row)
        if case == 2:  # target walled in
            return _render(["S.#..", "..#.T", "..#.."])
        if case == 3:  # wide and flat, or tall and thin, with walls
            r, c = rng.choice([(2, rng.randint(5, 15)), (rng.randint(5, 15), 2)])
            return _render(_random_grid(r, c, 0.3, rng))
        if case == 4:  # empty room, opposite corners
            r, c = rng.randint(2, 8), rng.randint(2, 8)
            rows = ["." * c for _ in range(r)]
            rows[0] = "S" + rows[0][1:]
            rows[-1] = rows[-1][:-1] + "T"
            return _render(rows)
        return _render(_maze(rng.randint(3, 9), rng.randint(3, 9), rng))
    if method == "small":
        return _render(_random_grid(rng.randint(1, 6), rng.randint(2, 6), 0.3, rng))
    if method == "sample":
        return _render(_grid(rng.randint(10, 80), rng.randint(10, 80), rng))
    if method == "large":
        side = SIDE_MAX * 5 ** (rng.random() - 1)  # side log-uniform in [20%, 100%] of the max
        r = max(2, int(side * rng.uniform(0.7, 1.0)))
        c = max(2, int(side * rng.uniform(0.7, 1.0)))
        return _render(_grid(min(r, SIDE_MAX), min(c, SIDE_MAX), rng, far=True))
    raise ValueError(f"unknown method {method!r}")
