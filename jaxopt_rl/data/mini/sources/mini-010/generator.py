"""Input generator for mini-010 (lichen forecast: x_n of a 2nd-order linear recurrence mod 1e9+7)."""
import random

MOD = 10**9 + 7
T_MAX = 10_000
N_MAX = 10**18


def _render(coeffs, seasons):
    return " ".join(map(str, coeffs)) + f"\n{len(seasons)}\n" + "".join(f"{n}\n" for n in seasons)


def _coeffs(rng):
    pool = [0, 1, 2, MOD - 1, rng.randrange(MOD)]
    return [rng.choice(pool) if rng.random() < 0.3 else rng.randrange(MOD) for _ in range(5)]


def _season(rng):
    """Seasons of every magnitude: a log-uniform number of bits."""
    bits = rng.randint(0, 60)
    return min(N_MAX, rng.randrange(1 << bits, 1 << (bits + 1)) - 1) if bits else rng.randint(0, 3)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:  # the first seasons
            return _render(_coeffs(rng), [0, 1, 2, 3])
        if case == 1:  # the far end
            return _render(_coeffs(rng), [N_MAX, N_MAX - 1, 2**59, 2**59 - 1])
        if case == 2:  # all parameters zero or maximal
            v = rng.choice([0, MOD - 1])
            return _render([v] * 5, [0, 1, rng.randint(2, 100), N_MAX])
        if case == 3:  # only the constant term drives growth
            return _render([0, 0, rng.randrange(1, MOD), 0, 0], [0, 1, 2, rng.randint(3, N_MAX)])
        return _render(_coeffs(rng), [0] * rng.randint(1, 3))
    if method == "small":
        return _render([rng.randint(0, 3) for _ in range(5)],
                       [rng.randint(0, 12) for _ in range(rng.randint(1, 5))])
    if method == "sample":
        return _render(_coeffs(rng), [_season(rng) for _ in range(rng.randint(20, 200))])
    if method == "large":
        t = max(1, int(T_MAX * 5 ** (rng.random() - 1)))
        return _render(_coeffs(rng), [_season(rng) for _ in range(t)])
    raise ValueError(f"unknown method {method!r}")
