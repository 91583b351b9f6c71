"""Input generator for mini-020 (convoy loading: split into k contiguous parts, minimise the largest load)."""
import random

N_MAX_LARGE = 100000
W_MAX = 10000


def _render(k, weights):
    return f"{len(weights)} {k}\n{' '.join(map(str, weights))}\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render(1, [rng.randint(1, W_MAX)])
        if case == 1:  # one truck per crate
            n = rng.randint(2, 8)
            return _render(n, [rng.randint(1, 100) for _ in range(n)])
        if case == 2:  # a single heavy crate dominates
            weights = [rng.randint(1, 5) for _ in range(8)]
            weights[rng.randrange(8)] = 1000
            return _render(3, weights)
        if case == 3:  # all equal
            n = rng.randint(3, 12)
            return _render(rng.randint(1, n), [7] * n)
        if case == 4:  # a single truck takes everything
            return _render(1, [rng.randint(1, W_MAX) for _ in range(rng.randint(2, 9))])
        return _render(2, [W_MAX] * 5)
    if method == "small":
        n = rng.randint(1, 10)
        return _render(rng.randint(1, n), [rng.randint(1, 20) for _ in range(n)])
    if method == "sample":
        n = rng.randint(50, 2000)
        k = rng.randint(1, min(n, 40))
        return _render(k, [rng.randint(1, rng.choice([10, W_MAX])) for _ in range(n)])
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        k = rng.randint(2, 12)
        return _render(k, [rng.randint(1, W_MAX) for _ in range(n)])
    raise ValueError(f"unknown method {method!r}")
