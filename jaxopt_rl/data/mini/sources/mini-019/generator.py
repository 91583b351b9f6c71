"""Input generator for mini-019 (best trading streak: maximum sum of a non-empty contiguous run)."""
import random

N_MAX_LARGE = 300000
A_MAX = 10**9


def _render(values):
    return f"{len(values)}\n" + "".join(f"{v}\n" for v in values)


def _values(n, rng, lo, hi):
    return [rng.randint(lo, hi) for _ in range(n)]


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render([rng.randint(-A_MAX, A_MAX)])
        if case == 1:  # everything negative: the answer is the largest single day
            return _render(_values(rng.randint(2, 8), rng, -A_MAX, -1))
        if case == 2:  # all zeros
            return _render([0] * rng.randint(1, 6))
        if case == 3:  # all maximal: the sum exceeds 32 bits
            return _render([A_MAX] * rng.randint(3, 10))
        if case == 4:  # the global minimum prefix comes after the global maximum prefix
            return _render([5, 4, -20, 3, -1, 2])
        return _render([-1, -A_MAX, -3, -A_MAX])
    if method == "small":
        return _render(_values(rng.randint(1, 10), rng, -10, 10))
    if method == "sample":
        n = rng.randint(50, 2000)
        lo = -rng.choice([10, 1000, A_MAX])
        return _render(_values(n, rng, lo, -lo // rng.randint(1, 3)))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        return _render(_values(n, rng, -A_MAX, A_MAX // rng.randint(1, 3)))
    raise ValueError(f"unknown method {method!r}")
