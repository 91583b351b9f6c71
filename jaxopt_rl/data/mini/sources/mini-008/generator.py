"""Input generator for mini-008 (seed vault: number of distinct values in ranges, offline)."""
import random

N_MAX = 100_000
Q_MAX = 100_000


def _render(s, queries):
    lines = [f"{len(s)} {len(queries)}", " ".join(map(str, s))]
    lines += [f"{a} {b}" for a, b in queries]
    return "\n".join(lines) + "\n"


def _species(n, rng):
    k = rng.choice([1, 3, 30, 1000, n, 10**9])  # how many species exist
    if rng.random() < 0.3:  # clustered: the same species sits in runs of jars
        out = []
        while len(out) < n:
            out += [rng.randint(1, k)] * rng.randint(1, 50)
        return out[:n]
    return [rng.randint(1, k) for _ in range(n)]


def _queries(n, q, rng):
    out = []
    max_len = rng.choice([10, 1000, n, n])
    for _ in range(q):
        length = rng.randint(1, min(n, max_len))
        a = rng.randint(1, n - length + 1)
        out.append((a, a + length - 1))
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:  # one jar
            return _render([rng.randint(1, 10**9)], [(1, 1)])
        if case == 1:  # all the same species, every range
            n = rng.randint(1, 6)
            return _render([7] * n, [(a, b) for a in range(1, n + 1) for b in range(a, n + 1)])
        if case == 2:  # all different
            n = rng.randint(1, 8)
            s = rng.sample(range(1, 10**9), n)
            return _render(s, [(1, n), (n, n), (1, 1)])
        if case == 3:  # alternating pair, queries in decreasing order of their right end
            n = rng.randint(2, 10)
            qs = sorted(((rng.randint(1, n), n - i) for i in range(n)), key=lambda t: -t[1])
            qs = [(min(a, b), b) for a, b in qs]
            return _render([1 + i % 2 for i in range(n)], qs)
        n = rng.randint(3, 10)  # a range starting on a species that repeats inside it
        s = [rng.randint(1, 3) for _ in range(n)]
        return _render(s, [(a, n) for a in range(1, n + 1)][::-1])
    if method == "small":
        n = rng.randint(1, 10)
        s = [rng.randint(1, 4) for _ in range(n)]
        return _render(s, _queries(n, rng.randint(1, 10), rng))
    if method == "sample":
        n = rng.randint(100, 2000)
        return _render(_species(n, rng), _queries(n, rng.randint(100, 2000), rng))
    if method == "large":
        n = max(1, int(N_MAX * 5 ** (rng.random() - 1)))
        q = max(1, int(Q_MAX * 5 ** (rng.random() - 1)))
        return _render(_species(n, rng), _queries(n, q, rng))
    raise ValueError(f"unknown method {method!r}")
