"""Input generator for mini-015 (shelf disorder: number of inversions, ties not counted)."""
import random

N_MAX = 150_000
A_MAX = 10**9


def _render(a):
    return f"{len(a)}\n{' '.join(map(str, a))}\n"


def _shelf(n, rng):
    v = rng.choice([n, A_MAX, 20])  # value range: a permutation-like range, huge, or many copies
    a = [rng.randint(1, v) for _ in range(n)]
    shape = rng.randrange(3)
    if shape == 1:  # nearly sorted: a few books misplaced
        a.sort()
        for _ in range(rng.randint(0, max(1, n // 100))):
            i, j = rng.randrange(n), rng.randrange(n)
            a[i], a[j] = a[j], a[i]
    elif shape == 2:  # nearly reversed
        a.sort(reverse=True)
        for _ in range(rng.randint(0, max(1, n // 100))):
            i, j = rng.randrange(n), rng.randrange(n)
            a[i], a[j] = a[j], a[i]
    return a


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # one book
            return _render([rng.randint(1, A_MAX)])
        if case == 1:  # all equal
            return _render([rng.randint(1, A_MAX)] * rng.randint(2, 10))
        if case == 2:  # strictly decreasing, extreme values
            n = rng.randint(2, 10)
            return _render(sorted(rng.sample(range(A_MAX - 100, A_MAX + 1), n), reverse=True))
        if case == 3:  # equal pairs next to real inversions
            return _render([2, 2, 1, 1, 3, 3][: rng.randint(2, 6)])
        if case == 4:  # numbers far above n
            n = rng.randint(2, 8)
            return _render([rng.randint(n + 1, A_MAX) for _ in range(n)])
        return _render(list(range(1, rng.randint(2, 10))))
    if method == "small":
        return _render([rng.randint(1, 6) for _ in range(rng.randint(1, 10))])
    if method == "sample":
        return _render(_shelf(rng.randint(100, 3000), rng))
    if method == "large":
        return _render(_shelf(max(1, int(N_MAX * 5 ** (rng.random() - 1))), rng))
    raise ValueError(f"unknown method {method!r}")
