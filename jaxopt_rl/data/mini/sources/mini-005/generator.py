"""Input generator for mini-005 (archipelago ferries: incremental connectivity queries)."""
import random

N_MAX = 100_000
Q_MAX = 200_000


def _render(n, events):
    lines = [f"{n} {len(events)}"] + [f"{c} {a} {b}" for c, a, b in events]
    return "\n".join(lines) + "\n"


def _ensure_question(n, events, rng):
    if not any(c == "Q" for c, _, _ in events):
        events.append(("Q", rng.randint(1, n), rng.randint(1, n)))
    return events


def _interleaved(n, q, build_share, rng):
    events = []
    for _ in range(q):
        c = "B" if rng.random() < build_share else "Q"
        events.append((c, rng.randint(1, n), rng.randint(1, n)))
    return _ensure_question(n, events, rng)


def _seasonal(n, q, build_share, seasons, rng):
    """Ferries open in a few seasons; between seasons only questions are asked."""
    events = []
    builds = int(q * build_share)
    per_season = max(1, builds // seasons)
    questions = max(1, (q - builds) // seasons)
    while len(events) < q:
        events += [("B", rng.randint(1, n), rng.randint(1, n)) for _ in range(per_season)]
        events += [("Q", rng.randint(1, n), rng.randint(1, n)) for _ in range(questions)]
    return _ensure_question(n, events[:q], rng)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:  # one island
            return _render(1, [("B", 1, 1), ("Q", 1, 1)][rng.randrange(2):])
        if case == 1:  # a chain built in order, then questions about both ends
            n = rng.randint(2, 12)
            events = [("B", i, i + 1) for i in range(1, n)]
            rng.shuffle(events)
            return _render(n, [*events, ("Q", 1, n), ("Q", n, 1), ("Q", 1, 1)])
        if case == 2:  # only questions
            n = rng.randint(1, 10)
            return _render(n, [("Q", rng.randint(1, n), rng.randint(1, n)) for _ in range(5)])
        if case == 3:  # repeated and self ferries
            n = rng.randint(2, 5)
            events = [("B", 1, 2), ("B", 2, 1), ("B", 2, 2), ("B", 1, 2)]
            return _render(n, [*events, ("Q", 2, 1), ("Q", 1, n)])
        n = rng.randint(3, 10)  # a star whose centre is linked last
        events = [("B", v, v + 1) for v in range(2, n, 2)] + [("B", 1, v) for v in range(3, n, 2)]
        rng.shuffle(events)
        return _render(n, events + [("Q", rng.randint(1, n), rng.randint(1, n)) for _ in range(4)])
    if method == "small":
        n = rng.randint(1, 8)
        return _render(n, _interleaved(n, rng.randint(1, 14), 0.5, rng))
    if method == "sample":
        n = rng.randint(50, 2000)
        if rng.random() < 0.3:  # a long line of ferries opened island by island
            n = rng.randint(1500, 3000)
            events = [("B", i, i + 1) for i in range(1, n)] + [("Q", 1, n)]
            events += [("Q", rng.randint(1, n), rng.randint(1, n)) for _ in range(20)]
            return _render(n, events)
        return _render(n, _interleaved(n, rng.randint(100, 4000), rng.uniform(0.2, 0.7), rng))
    if method == "large":
        n = max(2, int(N_MAX * 5 ** (rng.random() - 1)))
        q = max(2, int(Q_MAX * 5 ** (rng.random() - 1)))
        share = rng.uniform(0.2, 0.6)
        if rng.random() < 0.5:
            return _render(n, _interleaved(n, q, share, rng))
        return _render(n, _seasonal(n, q, share, rng.randint(1, 40), rng))
    raise ValueError(f"unknown method {method!r}")
