"""Input generator for mini-028 (gift boxes: number of divisors of many numbers up to 10^6)."""
import random

X_MAX = 10**6
Q_MAX_LARGE = 30000


def _render(values):
    return f"{len(values)}\n" + "".join(f"{x}\n" for x in values)


def _highly_composite_ish(rng, limit):
    value = 1
    for p in (2, 2, 2, 3, 3, 5, 7, 11, 13):
        if value * p <= limit and rng.random() < 0.7:
            value *= p
    return value


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        return _render(
            [
                [1],
                [X_MAX, 999983, 1],  # the bound, the largest prime below it
                [4, 9, 25, 49, 121, 998001],  # perfect squares
                [2 * 499979, 3 * 333331, 14, 22],  # one prime factor above the square root
                [720720, 831600, 997920],  # many divisors
                [2, 3, 5, 7, 11, 13],
            ][case]
        )
    if method == "small":
        return _render([rng.randint(1, 100) for _ in range(rng.randint(1, 10))])
    if method == "sample":
        limit = rng.choice([1000, X_MAX])
        return _render([rng.randint(1, limit) for _ in range(rng.randint(50, 2000))])
    if method == "large":
        scale = 5 ** (rng.random() - 1)  # log-uniform in [20%, 100%] of the max
        limit = int(X_MAX * 5 ** (rng.random() - 1))
        values = []
        for _ in range(int(Q_MAX_LARGE * scale)):
            r = rng.random()
            if r < 0.1:
                values.append(_highly_composite_ish(rng, limit))
            elif r < 0.15:
                values.append(rng.randint(1, 1000) ** 2 % limit + 1)
            else:
                values.append(rng.randint(1, limit))
        return _render(values)
    raise ValueError(f"unknown method {method!r}")
