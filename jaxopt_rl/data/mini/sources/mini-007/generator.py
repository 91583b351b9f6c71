"""Input generator for mini-007 (fence painting: length and count of the union of intervals)."""
import itertools
import math
import random

N_MAX = 150_000
X_MAX = 10**9


def _render(stretches):
    return f"{len(stretches)}\n" + "".join(f"{left} {r}\n" for left, r in stretches)


def _random_stretches(n, rng):
    # coverage density d (painted-length sum / span) sets the shape: about n * exp(-d) pieces
    span = rng.choice([10_000, 10**6, X_MAX])
    density = math.exp(rng.uniform(math.log(1.5), math.log(50)))
    max_len = max(1, int(2 * density * span / n))
    out = []
    for _ in range(n):
        left = rng.randint(0, span - 1)
        out.append((left, min(span, left + rng.randint(1, max_len))))
    if rng.random() < 0.3:  # touching neighbours
        for i in range(0, len(out) - 1, 2):
            right = out[i][1]
            if right < X_MAX:
                out[i + 1] = (right, min(X_MAX, right + rng.randint(1, max_len)))
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # the whole fence at once
            return _render([(0, X_MAX)])
        if case == 1:  # a chain of touching stretches
            n = rng.randint(2, 10)
            cuts = sorted(rng.sample(range(0, 1000), n + 1))
            stretches = list(itertools.pairwise(cuts))
            rng.shuffle(stretches)
            return _render(stretches)
        if case == 2:  # nested stretches
            n = rng.randint(2, 8)
            return _render([(i, 100 - i) for i in rng.sample(range(0, 40), n)])
        if case == 3:  # identical stretches
            left = rng.randint(0, X_MAX - 1)
            return _render([(left, rng.randint(left + 1, X_MAX))] * rng.randint(1, 5))
        if case == 4:  # unit stretches, some adjacent
            return _render([(x, x + 1) for x in rng.sample(range(0, 30), rng.randint(1, 12))])
        return _render([(X_MAX - 1, X_MAX), (0, 1)][: rng.randint(1, 2)])
    if method == "small":
        n = rng.randint(1, 8)
        out = []
        for _ in range(n):
            left = rng.randint(0, 19)
            out.append((left, rng.randint(left + 1, 20)))
        return _render(out)
    if method == "sample":
        return _render(_random_stretches(rng.randint(100, 3000), rng))
    if method == "large":
        return _render(_random_stretches(max(1, int(N_MAX * 5 ** (rng.random() - 1))), rng))
    raise ValueError(f"unknown method {method!r}")
