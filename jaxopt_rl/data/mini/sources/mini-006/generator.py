"""Input generator for mini-006 (glacier station: sliding-window maxima with window <= 1000)."""
import random

N_MAX = 200_000
K_MAX = 1000
T_MAX = 10**9


def _render(k, t):
    return f"{len(t)} {k}\n{' '.join(map(str, t))}\n"


def _readings(n, rng):
    shape = rng.randrange(4)
    if shape == 0:  # independent readings
        return [rng.randint(-T_MAX, T_MAX) for _ in range(n)]
    if shape == 1:  # few distinct values: many ties
        vals = [rng.randint(-50, 50) for _ in range(rng.randint(1, 5))]
        return [rng.choice(vals) for _ in range(n)]
    if shape == 2:  # a slow cooling trend: the maximum leaves the buffer every hour
        return [T_MAX // 2 - i * 1000 + rng.randint(0, 999) for i in range(n)]
    # a random walk around freezing, mostly negative
    x, out = -2000, []
    for _ in range(n):
        x += rng.randint(-100, 90)
        out.append(max(-T_MAX, min(T_MAX, x)))
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # a single reading
            return _render(1, [rng.choice([-T_MAX, 0, T_MAX])])
        if case == 1:  # window = whole series
            n = rng.randint(1, 10)
            return _render(n, [rng.randint(-T_MAX, T_MAX) for _ in range(n)])
        if case == 2:  # window of one
            n = rng.randint(1, 10)
            return _render(1, [rng.randint(-9, 9) for _ in range(n)])
        if case == 3:  # all readings negative and equal runs
            n = rng.randint(2, 12)
            return _render(rng.randint(1, n), [-rng.randint(1, 3) for _ in range(n)])
        if case == 4:  # strictly decreasing
            n = rng.randint(2, 12)
            return _render(rng.randint(1, n), sorted(rng.sample(range(-100, 100), n), reverse=True))
        n = rng.randint(K_MAX, K_MAX + 20)  # the largest window
        return _render(K_MAX, _readings(n, rng))
    if method == "small":
        n = rng.randint(1, 10)
        return _render(rng.randint(1, n), [rng.randint(-5, 5) for _ in range(n)])
    if method == "sample":
        n = rng.randint(100, 3000)
        return _render(rng.randint(1, min(n, K_MAX)), _readings(n, rng))
    if method == "large":
        n = max(1, int(N_MAX * 5 ** (rng.random() - 1)))
        k = max(1, int(min(n, K_MAX) ** rng.uniform(0.5, 1.0)))  # log-uniform, mostly wide
        return _render(k, _readings(n, rng))
    raise ValueError(f"unknown method {method!r}")
