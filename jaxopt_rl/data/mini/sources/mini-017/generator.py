"""Input generator for mini-017 (fibre network: minimum spanning tree weight or IMPOSSIBLE)."""
import random

N_MAX_LARGE = 5000
M_MAX = 100000
W_MAX = 10**9


def _graph(n, m, w_lo, w_hi, rng, connected=True):
    edges = []
    if connected:
        labels = list(range(1, n + 1))
        rng.shuffle(labels)
        for i in range(1, n):  # random spanning tree first so every test is solvable
            edges.append((labels[i], labels[rng.randrange(i)], rng.randint(w_lo, w_hi)))
    while len(edges) < m:
        edges.append((rng.randint(1, n), rng.randint(1, n), rng.randint(w_lo, w_hi)))
    rng.shuffle(edges)
    return edges


def _render(n, edges):
    return "\n".join([f"{n} {len(edges)}"] + [f"{u} {v} {w}" for u, v, w in edges]) + "\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return "1 0\n"
        if case == 1:  # two components
            a = rng.randint(1, 4)
            b = rng.randint(1, 4)
            e1 = [(u, v, w) for u, v, w in _graph(a, a, 1, 9, rng)]
            e2 = [(u + a, v + a, w) for u, v, w in _graph(b, b, 1, 9, rng)]
            return _render(a + b, e1 + e2)
        if case == 2:  # self loops and parallel edges with different weights
            return _render(3, [(1, 1, 1), (1, 2, 7), (2, 1, 3), (2, 3, 5), (3, 3, 1), (3, 2, 4)])
        if case == 3:  # maximal weights: total exceeds 32 bits
            n = rng.randint(2, 6)
            return _render(n, _graph(n, n + 2, W_MAX - 5, W_MAX, rng))
        if case == 4:  # weights with different digit counts
            return _render(4, [(1, 2, 10), (2, 3, 9), (3, 4, 100), (1, 4, 20), (1, 3, 11)])
        return _render(2, [])  # no cables at all
    if method == "small":
        n = rng.randint(1, 8)
        w_hi = rng.choice([9, 99, 1000])
        return _render(n, _graph(n, rng.randint(0, 3 * n), 1, w_hi, rng, rng.random() < 0.8))
    if method == "sample":
        n = rng.randint(20, 300)
        m = rng.randint(n, 8 * n)
        return _render(n, _graph(n, m, 1, rng.choice([100, W_MAX]), rng, rng.random() < 0.9))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        m = min(M_MAX, rng.randint(5 * n, 25 * n))
        return _render(n, _graph(n, m, 1, W_MAX, rng))
    raise ValueError(f"unknown method {method!r}")
