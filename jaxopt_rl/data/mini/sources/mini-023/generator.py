"""Input generator for mini-023 (tile patterns: gcd of a[left..r] for many range queries)."""
import random

N_MAX_LARGE = 100000
SMOOTH_PRIMES = (2, 3, 5, 7, 11, 13)


def _smooth(rng, limit=10**9):
    """A random product of small primes (so range gcds are rarely 1)."""
    value = 1
    for _ in range(rng.randint(0, 25)):
        p = rng.choice(SMOOTH_PRIMES)
        if value * p > limit:
            break
        value *= p
    return value


def _values(n, rng, limit=10**9):
    common = _smooth(rng, 1000)
    pool = [common * _smooth(rng, limit // common) for _ in range(min(n, 500))]
    values = rng.choices(pool, k=n)
    for _ in range(n // 50):
        values[rng.randrange(n)] = rng.randint(1, limit)  # occasional arbitrary value
    return values


def _queries(n, q, rng, sorted_by_right=False):
    out = []
    for _ in range(q):
        if rng.random() < 0.5:
            length = int(n ** rng.random())  # many short ranges, some long ones
            left = rng.randint(1, n - length + 1)
            r = left + length - 1
        else:
            left, r = sorted((rng.randint(1, n), rng.randint(1, n)))
        out.append((left, r))
    if sorted_by_right:
        out.sort(key=lambda lr: lr[1])
    return out


def _render(values, queries):
    lines = [f"{len(values)} {len(queries)}", " ".join(map(str, values))]
    lines += [f"{left} {r}" for left, r in queries]
    return "\n".join(lines) + "\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:
            return _render([rng.randint(1, 10**9)], [(1, 1)])
        if case == 1:  # equal values
            n = rng.randint(2, 6)
            return _render([12] * n, _queries(n, 5, rng))
        if case == 2:  # whole-array and single-element queries, queries not sorted
            values = _values(8, rng)
            return _render(values, [(1, 8), (8, 8), (1, 1), (3, 6), (2, 7)])
        if case == 3:  # long array, ranges longer than 1024
            values = [6 * rng.randint(1, 50) for _ in range(3000)]
            values[rng.randrange(3000)] = 9
            return _render(values, [(1, 3000), (2, 2999), (1500, 3000), (1, 1100)])
        return _render([10**9, 5 * 10**8, 10**9], [(1, 3), (1, 1), (1, 2)])
    if method == "small":
        n = rng.randint(1, 10)
        return _render(_values(n, rng, 1000), _queries(n, rng.randint(1, 8), rng))
    if method == "sample":
        n = rng.randint(50, 3000)
        return _render(_values(n, rng), _queries(n, rng.randint(50, 2000), rng))
    if method == "large":
        scale = 5 ** (rng.random() - 1)  # log-uniform in [20%, 100%] of the max
        n = int(N_MAX_LARGE * scale)
        q = int(N_MAX_LARGE * 5 ** (rng.random() - 1))
        return _render(_values(n, rng), _queries(n, q, rng))
    raise ValueError(f"unknown method {method!r}")
