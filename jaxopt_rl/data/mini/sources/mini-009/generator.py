"""Input generator for mini-009 (prime locker audit: count and sum of primes in ranges)."""
import math
import random

Q_MAX = 100_000
R_MAX = 3_000_000
SMALL_PRIMES = [2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37, 41, 43, 47, 53, 59, 61, 67, 71]


def _render(requests):
    return f"{len(requests)}\n" + "".join(f"{a} {b}\n" for a, b in requests)


def _requests(q, top, rng):
    out = []
    width = rng.choice([10, 1000, top])
    for _ in range(q):
        a = rng.randint(1, top)
        b = min(top, a + rng.randint(0, width))
        out.append((a, b))
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # the smallest numbers
            return _render([(1, 1), (1, 2), (2, 2), (1, 3)][: rng.randint(1, 4)])
        if case == 1:  # the very top
            return _render([(R_MAX, R_MAX), (R_MAX - 100, R_MAX), (1, R_MAX)])
        if case == 2:  # blocks ending on the square of a prime
            p = rng.choice(SMALL_PRIMES)
            return _render([(max(1, p * p - rng.randint(0, 5)), p * p), (p * p, p * p)])
        if case == 3:  # a prime gap (no primes at all)
            return _render([(24, 28), (90, 96), (114, 126)])
        if case == 4:  # all blocks start at 1
            return _render([(1, rng.randint(1, 100)) for _ in range(rng.randint(1, 5))])
        p = rng.choice(SMALL_PRIMES[4:])  # largest request just above a prime square
        top = p * p + rng.randint(0, 2 * p)
        return _render([(rng.randint(1, top), top) for _ in range(3)])
    if method == "small":
        top = rng.randint(1, 60)
        return _render(_requests(rng.randint(1, 6), top, rng))
    if method == "sample":
        top = rng.randint(100, 20_000)
        return _render(_requests(rng.randint(10, 500), top, rng))
    if method == "large":
        top = int(R_MAX * 5 ** (rng.random() - 1))
        if rng.random() < 0.5:  # make the top land on a prime square now and then
            p = math.isqrt(top)
            top = p * p
        q = max(1, int(Q_MAX * 5 ** (rng.random() - 1)))
        return _render(_requests(q, top, rng))
    raise ValueError(f"unknown method {method!r}")
