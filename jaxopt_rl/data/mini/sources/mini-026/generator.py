"""Input generator for mini-026 (river delta: number of paths from junction 1 to junction n in a DAG, mod 1e9+7)."""
import random

N_MAX_LARGE = 60000


def _dag(n, m, rng, shuffle_labels=True, reach=20):
    """m edges between positions i < j of a hidden order that starts at junction 1 and ends at junction n."""
    if n == 1:
        return []
    middle = list(range(2, n))
    if shuffle_labels:
        rng.shuffle(middle)
    order = [1, *middle, n]
    edges = []
    for _ in range(m):
        i = rng.randrange(n - 1)
        if rng.random() < 0.8:
            j = min(n - 1, i + rng.randint(1, reach))  # local edges make long, branching paths
        else:
            j = rng.randint(i + 1, n - 1)
        edges.append((order[i], order[j]))
    return edges


def _render(n, edges):
    return "\n".join([f"{n} {len(edges)}"] + [f"{u} {v}" for u, v in edges]) + "\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return "1 0\n"
        if case == 1:  # no route at all
            return "3 1\n1 2\n"
        if case == 2:  # parallel channels count separately
            return "2 3\n1 2\n1 2\n1 2\n"
        if case == 3:  # ladder: 2^k routes, far above the modulus
            k = rng.randint(31, 40)
            edges = []
            for i in range(k):
                a, b = 2 * i + 1, 2 * i + 2
                edges += [(a, a + 2), (a, b), (b, a + 2)]
            return _render(2 * k + 1, edges)
        if case == 4:  # another source that is not junction 1
            return "4 4\n1 3\n2 3\n3 4\n2 4\n"
        return "4 3\n3 2\n1 3\n2 4\n"  # labels not in topological order
    if method == "small":
        n = rng.randint(1, 8)
        return _render(n, _dag(n, rng.randint(0, 2 * n), rng, rng.random() < 0.7, 3))
    if method == "sample":
        n = rng.randint(20, 2000)
        return _render(n, _dag(n, rng.randint(n, 4 * n), rng, True, rng.randint(2, 30)))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        return _render(n, _dag(n, rng.randint(2 * n, 3 * n), rng, True, rng.randint(5, 200)))
    raise ValueError(f"unknown method {method!r}")
