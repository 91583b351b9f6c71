"""Input generator for mini-016 (restoration schedule: lexicographically smallest topological order)."""
import random

N_MAX_LARGE = 15000


def _acyclic_edges(n, m, rng):
    """m edges consistent with a hidden random order, so the graph is a DAG."""
    order = list(range(1, n + 1))
    rng.shuffle(order)
    edges = []
    for _ in range(m):
        i, j = rng.randrange(n), rng.randrange(n)
        while i == j:
            i, j = rng.randrange(n), rng.randrange(n)
        if i > j:
            i, j = j, i
        edges.append((order[i], order[j]))
    return edges


def _add_cycle(n, edges, rng):
    """Close a cycle through 2..4 random jobs (needs n >= 2)."""
    k = rng.randint(2, min(4, n))
    nodes = rng.sample(range(1, n + 1), k)
    for a, b in zip(nodes, nodes[1:] + nodes[:1]):
        edges.append((a, b))
    rng.shuffle(edges)


def _render(n, edges):
    lines = [f"{n} {len(edges)}"] + [f"{a} {b}" for a, b in edges]
    return "\n".join(lines) + "\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return "1 0\n"
        if case == 1:  # a chain forced in reverse label order
            n = rng.randint(2, 8)
            return _render(n, [(v + 1, v) for v in range(1, n)])
        if case == 2:  # duplicated constraints
            n = rng.randint(2, 6)
            edges = _acyclic_edges(n, rng.randint(1, 4), rng)
            edges += edges
            rng.shuffle(edges)
            return _render(n, edges)
        if case == 3:  # two-job cycle
            return _render(2, [(1, 2), (2, 1)])
        if case == 4:  # no constraints at all
            return _render(rng.randint(2, 10), [])
        n = rng.randint(3, 7)  # star: one job needed by everything
        hub = rng.randint(1, n)
        return _render(n, [(hub, v) for v in range(1, n + 1) if v != hub])
    if method == "small":
        n = rng.randint(1, 8)
        edges = _acyclic_edges(n, rng.randint(0, 2 * n), rng) if n > 1 else []
        if n > 1 and rng.random() < 0.2:
            _add_cycle(n, edges, rng)
        return _render(n, edges)
    if method == "sample":
        n = rng.randint(20, 300)
        edges = _acyclic_edges(n, rng.randint(0, 3 * n), rng)
        if rng.random() < 0.15:
            _add_cycle(n, edges, rng)
        return _render(n, edges)
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        edges = _acyclic_edges(n, rng.randint(n, 4 * n), rng)
        return _render(n, edges)
    raise ValueError(f"unknown method {method!r}")
