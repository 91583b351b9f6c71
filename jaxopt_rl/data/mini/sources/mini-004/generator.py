"""Input generator for mini-004 (courier dispatch: single-source shortest paths, positive weights)."""
import random

N_MAX = 5000
M_MAX = 100_000
W_MAX = 10**9


def _render(n, edges):
    lines = [f"{n} {len(edges)}"] + [f"{u} {v} {w}" for u, v, w in edges]
    return "\n".join(lines) + "\n"


def _random_graph(n, m, w_max, rng):
    edges = []
    # a random spanning arborescence from depot 1 keeps most depots reachable
    if n > 1 and rng.random() < 0.8:
        order = list(range(2, n + 1))
        rng.shuffle(order)
        seen = [1]
        for v in order[: min(len(order), m)]:
            edges.append((rng.choice(seen), v, rng.randint(1, w_max)))
            seen.append(v)
    while len(edges) < m:
        edges.append((rng.randint(1, n), rng.randint(1, n), rng.randint(1, w_max)))
    rng.shuffle(edges)
    return edges


def _layered_graph(n, m, w_max, rng):
    """Depots in consecutive layers with roads mostly to the next layer: shortest paths use many
    roads, which is what makes round-based (Bellman-Ford style) methods slow."""
    layers = rng.randint(20, 300)
    layer_of = [0, 0] + [1 + (v - 2) * layers // max(1, n - 1) for v in range(2, n + 1)]
    by_layer = [[] for _ in range(layers + 2)]
    for v in range(1, n + 1):
        by_layer[layer_of[v]].append(v)
    by_layer = [vs for vs in by_layer if vs]
    edges = []
    while len(edges) < m:
        i = rng.randrange(len(by_layer) - 1) if len(by_layer) > 1 else 0
        nxt = by_layer[min(i + 1, len(by_layer) - 1)]
        if rng.random() < 0.9:
            edges.append((rng.choice(by_layer[i]), rng.choice(nxt), rng.randint(1, w_max)))
        else:  # a road back to an earlier layer: cycles, but never a shortcut forward
            back = by_layer[rng.randint(0, i)]
            edges.append((rng.choice(by_layer[i]), rng.choice(back), rng.randint(1, w_max)))
    rng.shuffle(edges)
    if rng.random() < 0.5:
        # roads listed by source depot, farthest first (an office that files roads by depot
        # number): a sweep over the list then advances only one layer per round
        edges.sort(key=lambda e: -e[0])
    return edges


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # a lone depot
            return _render(1, [(1, 1, rng.randint(1, W_MAX))] * rng.randint(0, 2))
        if case == 1:  # a long chain of heavy roads: distances far beyond 10^9
            n = rng.randint(2, 60)
            return _render(n, [(i, i + 1, rng.randint(W_MAX // 2, W_MAX)) for i in range(1, n)])
        if case == 2:  # parallel roads with different times, in random order
            n = rng.randint(2, 6)
            edges = [(u, v, rng.randint(1, 20)) for u in range(1, n) for v in (u + 1,)
                     for _ in range(rng.randint(1, 4))]
            rng.shuffle(edges)
            return _render(n, edges)
        if case == 3:  # nothing leaves depot 1
            n = rng.randint(2, 8)
            return _render(n, [(rng.randint(2, n), rng.randint(1, n), rng.randint(1, W_MAX))
                               for _ in range(rng.randint(0, 10))])
        if case == 4:  # a heavy direct road versus a light detour
            return _render(3, [(1, 3, W_MAX), (1, 2, 1), (2, 3, 1)])
        n = rng.randint(2, 8)  # dense tiny graph with maximal weights
        return _render(n, _random_graph(n, rng.randint(n, 3 * n), W_MAX, rng))
    if method == "small":
        n = rng.randint(1, 8)
        return _render(n, _random_graph(n, rng.randint(0, 3 * n), rng.choice([5, 100]), rng))
    if method == "sample":
        n = rng.randint(30, 400)
        m = rng.randint(n, 8 * n)
        return _render(n, _random_graph(n, m, rng.choice([10, 1000, W_MAX]), rng))
    if method == "large":
        n = max(2, int(N_MAX * 5 ** (rng.random() - 1)))
        m = max(n, int(M_MAX * 5 ** (rng.random() - 1)))
        shape = _layered_graph if rng.random() < 0.5 else _random_graph
        return _render(n, shape(n, m, rng.choice([100, W_MAX]), rng))
    raise ValueError(f"unknown method {method!r}")
