"""Input generator for mini-027 (conference room: maximum number of pairwise compatible meetings)."""
import random

N_MAX_LARGE = 100000
T_MAX = 10**9


def _meetings(n, rng, horizon, max_len):
    out = []
    for _ in range(n):
        s = rng.randint(0, horizon - 1)
        e = min(horizon, s + rng.randint(1, max_len))
        out.append((s, e))
    return out


def _render(meetings):
    return f"{len(meetings)}\n" + "".join(f"{s} {e}\n" for s, e in meetings)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render([(0, T_MAX)])
        if case == 1:  # back-to-back meetings all fit
            k = rng.randint(2, 8)
            return _render([(i * 10, i * 10 + 10) for i in range(k)][::-1])
        if case == 2:  # identical meetings
            return _render([(5, 9)] * rng.randint(2, 6))
        if case == 3:  # one long early-starting meeting blocks three short ones
            return _render([(0, 100), (1, 2), (3, 4), (5, 6)])
        if case == 4:  # shortest meeting overlaps two compatible ones
            return _render([(0, 10), (9, 12), (11, 20)])
        return _render([(0, 1), (1, 2), (0, 2), (2, 3)])
    if method == "small":
        n = rng.randint(1, 10)
        return _render(_meetings(n, rng, 30, rng.choice([3, 10, 30])))
    if method == "sample":
        n = rng.randint(100, 3000)
        return _render(_meetings(n, rng, rng.choice([1000, T_MAX]), rng.choice([50, 10**6, 10**8])))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        # Typical overlap depth n * max_len / T between 1 and ~600 meetings.
        depth = 600 ** rng.random()
        return _render(_meetings(n, rng, T_MAX, max(1, int(depth * T_MAX / n))))
    raise ValueError(f"unknown method {method!r}")
