"""Input generator for mini-001 (ridge trail climbs: directed range sums of positive parts)."""
import random

N_MAX = 200_000
Q_MAX = 200_000
D_MAX = 10**9


def _log_uniform(max_value, rng):
    """An integer log-uniform in [20%, 100%] of max_value (varied sizes give varied durations)."""
    return max(1, int(max_value * 5 ** (rng.random() - 1)))


def _render(d, plans):
    lines = [f"{len(d)} {len(plans)}", " ".join(map(str, d))]
    lines += [f"{a} {b}" for a, b in plans]
    return "\n".join(lines) + "\n"


def _random_plans(n, q, rng):
    return [(rng.randint(0, n), rng.randint(0, n)) for _ in range(q)]


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:  # a single segment, every possible plan
            d = [rng.choice([-D_MAX, -1, 0, 1, D_MAX])]
            return _render(d, [(0, 0), (0, 1), (1, 0), (1, 1)])
        if case == 1:  # extreme values, plans touching both trail ends
            n = rng.randint(2, 12)
            d = [rng.choice([-D_MAX, D_MAX]) for _ in range(n)]
            return _render(d, [(0, n), (n, 0), (0, rng.randint(0, n)), (rng.randint(0, n), n)])
        if case == 2:  # flat trail
            n = rng.randint(1, 10)
            return _render([0] * n, _random_plans(n, rng.randint(1, 6), rng))
        if case == 3:  # monotone trail, walked both ways
            n = rng.randint(1, 10)
            sign = rng.choice([-1, 1])
            d = [sign * rng.randint(1, D_MAX) for _ in range(n)]
            return _render(d, [(0, n), (n, 0), *_random_plans(n, 3, rng)])
        n = rng.randint(1, 8)  # every plan on a tiny trail
        d = [rng.randint(-9, 9) for _ in range(n)]
        return _render(d, [(a, b) for a in range(n + 1) for b in range(n + 1)])
    if method == "small":
        n = rng.randint(1, 10)
        d = [rng.randint(-10, 10) for _ in range(n)]
        return _render(d, _random_plans(n, rng.randint(1, 10), rng))
    if method == "sample":
        n = rng.randint(50, 2000)
        d = [rng.randint(-D_MAX, D_MAX) for _ in range(n)]
        return _render(d, _random_plans(n, rng.randint(50, 2000), rng))
    if method == "large":
        n, q = _log_uniform(N_MAX, rng), _log_uniform(Q_MAX, rng)
        d = [rng.randint(-D_MAX, D_MAX) for _ in range(n)]
        return _render(d, _random_plans(n, q, rng))
    raise ValueError(f"unknown method {method!r}")
