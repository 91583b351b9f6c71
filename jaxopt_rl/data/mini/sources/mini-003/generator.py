"""Input generator for mini-003 (rising lanterns: longest strictly increasing subsequence)."""
import random

N_MAX = 100_000
B_MAX = 10**9


def _render(b):
    return f"{len(b)}\n{' '.join(map(str, b))}\n"


def _shaped(n, rng):
    """A random sequence of one of several shapes (the answer ranges from ~1 to ~n)."""
    shape = rng.randrange(4)
    if shape == 0:  # independent values: answer about 2 * sqrt(n)
        return [rng.randint(-B_MAX, B_MAX) for _ in range(n)]
    if shape == 1:  # rising trend plus noise: long answers
        noise = rng.randint(1, max(1, n // 10))
        return [min(B_MAX, i * 1000 + rng.randint(-noise, noise) * 1000 - B_MAX // 2)
                for i in range(n)]
    if shape == 2:  # few distinct values: many equal lanterns
        k = rng.randint(1, 30)
        return [rng.randint(-k, k) for _ in range(n)]
    # falling trend plus noise: short answers
    return [B_MAX // 2 - i * 1000 + rng.randint(-5000, 5000) for i in range(n)]


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render([rng.choice([-B_MAX, 0, B_MAX])])
        if case == 1:  # all equal
            return _render([rng.randint(-B_MAX, B_MAX)] * rng.randint(2, 10))
        if case == 2:  # strictly increasing
            n = rng.randint(2, 10)
            return _render(sorted(rng.sample(range(-B_MAX, B_MAX), n)))
        if case == 3:  # non-decreasing with repeats
            n = rng.randint(2, 10)
            return _render(sorted(rng.randint(-3, 3) for _ in range(n)))
        if case == 4:  # all negative
            return _render([rng.randint(-B_MAX, -1) for _ in range(rng.randint(1, 10))])
        return _render([rng.choice([-B_MAX, B_MAX]) for _ in range(rng.randint(2, 10))])
    if method == "small":
        n = rng.randint(1, 10)
        return _render([rng.randint(-5, 5) for _ in range(n)])
    if method == "sample":
        return _render(_shaped(rng.randint(100, 3000), rng))
    if method == "large":
        return _render(_shaped(max(1, int(N_MAX * 5 ** (rng.random() - 1))), rng))
    raise ValueError(f"unknown method {method!r}")
