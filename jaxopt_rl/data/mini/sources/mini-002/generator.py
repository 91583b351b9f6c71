"""Input generator for mini-002 (twin cookie boxes: count index pairs with a given sum)."""
import random

N_MAX = 200_000
A_MAX = 10**9


def _render(w, a):
    return f"{len(a)} {w}\n" + "".join(f"{x}\n" for x in a)


def _random_case(n, rng):
    # A small value range makes many equal weights and many matching pairs.
    v = rng.choice([5, 50, 1000, 10**5, A_MAX])
    a = [rng.randint(1, v) for _ in range(n)]
    w = rng.randint(2, 2 * v)
    if rng.random() < 0.3:
        w = 2 * rng.randint(1, v)  # even target: the "half weight" case
    return _render(w, a)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(7)
        if case == 0:  # a single cookie
            x = rng.randint(1, A_MAX)
            return _render(2 * x, [x])
        if case == 1:  # every cookie weighs exactly half the target
            n = rng.randint(2, 12)
            x = rng.randint(1, A_MAX)
            return _render(2 * x, [x] * n)
        if case == 2:  # extreme weights
            n = rng.randint(2, 10)
            a = [rng.choice([1, A_MAX, A_MAX - 1, 2]) for _ in range(n)]
            return _render(rng.choice([A_MAX + 1, 2 * A_MAX, 2, 3]), a)
        if case == 3:  # no pair can match
            n = rng.randint(1, 10)
            return _render(2, [rng.randint(2, 100) for _ in range(n)])
        if case == 4:  # two heavy groups that match each other
            x, y = rng.randint(1, 1000), rng.randint(1, 1000)
            a = [x] * rng.randint(1, 6) + [y] * rng.randint(1, 6)
            rng.shuffle(a)
            return _render(x + y, a)
        if case == 5:  # exactly two cookies, matching or not
            x, y = rng.randint(1, A_MAX), rng.randint(1, A_MAX)
            return _render(x + y + rng.choice([0, 0, 1]), [x, y])
        return _random_case(rng.randint(2, 8), rng)
    if method == "small":
        n = rng.randint(1, 10)
        v = rng.randint(1, 10)
        return _render(rng.randint(2, 2 * v), [rng.randint(1, v) for _ in range(n)])
    if method == "sample":
        return _random_case(rng.randint(100, 3000), rng)
    if method == "large":
        return _random_case(max(1, int(N_MAX * 5 ** (rng.random() - 1))), rng)
    raise ValueError(f"unknown method {method!r}")
