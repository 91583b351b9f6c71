"""Input generator for mini-030 (orchard harvest: rectangle sums on a grid, corners in any order)."""
import random

CELLS_MAX_LARGE = 160000
Q_MAX_LARGE = 10000
V_MAX = 10**9


def _render(grid, queries):
    lines = [f"{len(grid)} {len(grid[0])}"]
    lines += [" ".join(map(str, row)) for row in grid]
    lines.append(str(len(queries)))
    lines += [" ".join(map(str, q)) for q in queries]
    return "\n".join(lines) + "\n"


def _grid(rows, cols, rng, v_max):
    return [[rng.randint(0, v_max) for _ in range(cols)] for _ in range(rows)]


def _queries(rows, cols, q, rng):
    out = []
    for _ in range(q):
        r1, r2 = rng.randint(1, rows), rng.randint(1, rows)
        c1, c2 = rng.randint(1, cols), rng.randint(1, cols)
        out.append((r1, c1, r2, c2))  # corners in any order
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:
            return _render([[rng.randint(0, V_MAX)]], [(1, 1, 1, 1)])
        if case == 1:  # single row, reversed corners
            grid = _grid(1, 6, rng, 9)
            return _render(grid, [(1, 6, 1, 1), (1, 3, 1, 4), (1, 1, 1, 6)])
        if case == 2:  # single column
            grid = _grid(5, 1, rng, 9)
            return _render(grid, [(5, 1, 2, 1), (1, 1, 5, 1)])
        if case == 3:  # maximal values, whole grid
            grid = [[V_MAX] * 4 for _ in range(3)]
            return _render(grid, [(1, 1, 3, 4), (3, 4, 1, 1), (2, 2, 2, 3)])
        grid = _grid(3, 3, rng, 0)  # all zeros
        return _render(grid, [(1, 1, 3, 3)])
    if method == "small":
        rows, cols = rng.randint(1, 5), rng.randint(1, 5)
        return _render(_grid(rows, cols, rng, 20), _queries(rows, cols, rng.randint(1, 6), rng))
    if method == "sample":
        rows, cols = rng.randint(5, 60), rng.randint(5, 60)
        q = rng.randint(10, 500)
        return _render(_grid(rows, cols, rng, rng.choice([9, V_MAX])), _queries(rows, cols, q, rng))
    if method == "large":
        cells = int(CELLS_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%]
        rows = int(cells ** rng.uniform(0.35, 0.65))
        cols = max(1, cells // rows)
        q = int(Q_MAX_LARGE * 5 ** (rng.random() - 1))
        return _render(_grid(rows, cols, rng, V_MAX), _queries(rows, cols, q, rng))
    raise ValueError(f"unknown method {method!r}")
