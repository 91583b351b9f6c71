"""Input generator for mini-012 (expedition backpack: 0/1 knapsack with capacity <= 10^5)."""
import random

N_MAX = 200
W_MAX = 100_000
V_MAX = 10**9


def _render(cap, items):
    return f"{len(items)} {cap}\n" + "".join(f"{w} {v}\n" for w, v in items)


def _items(n, cap, rng):
    shape = rng.randrange(3)
    heavy = rng.choice([cap // 10, cap // 3, cap])  # the heaviest item relative to the pack
    heavy = max(1, heavy)
    out = []
    for _ in range(n):
        w = rng.randint(1, heavy)
        if shape == 0:  # unrelated values
            v = rng.randint(1, V_MAX)
        elif shape == 1:  # value roughly proportional to weight: many near-ties
            v = w * 1000 + rng.randint(0, 999)
        else:  # small values
            v = rng.randint(1, 100)
        out.append((w, v))
    return out


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # one item that fits exactly, or not at all
            w = rng.randint(1, 10)
            return _render(w - rng.randint(0, 1) or 1, [(w, rng.randint(1, V_MAX))])
        if case == 1:  # many copies of one light, valuable item
            return _render(rng.randint(5, 20), [(1, V_MAX)] * rng.randint(2, 6))
        if case == 2:  # nothing fits
            return _render(1, [(rng.randint(2, 9), rng.randint(1, 9)) for _ in range(rng.randint(1, 5))])
        if case == 3:  # greedy by value per weight is wrong
            return _render(10, [(6, 7), (5, 5), (5, 5)])
        if case == 4:  # the largest capacity, few items
            return _render(W_MAX, [(rng.randint(1, W_MAX), rng.randint(1, V_MAX)) for _ in range(3)])
        return _render(rng.randint(1, 30), [(rng.randint(1, 10), 1) for _ in range(rng.randint(1, 8))])
    if method == "small":
        cap = rng.randint(1, 20)
        return _render(cap, [(rng.randint(1, 12), rng.randint(1, 20)) for _ in range(rng.randint(1, 8))])
    if method == "sample":
        cap = rng.randint(50, 3000)
        return _render(cap, _items(rng.randint(5, 40), cap, rng))
    if method == "large":
        n = max(1, int(N_MAX * 5 ** (rng.random() - 1)))
        cap = max(1, int(W_MAX * 5 ** (rng.random() - 1)))
        return _render(cap, _items(n, cap, rng))
    raise ValueError(f"unknown method {method!r}")
