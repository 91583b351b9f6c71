"""Input generator for mini-024 (relay towers: farthest weighted distance from every tree node)."""
import random

N_MAX_LARGE = 50000
W_MAX = 10**6


def _parents(n, shape, rng):
    """parent[i] for nodes 2..n under a shape: random recursive tree, long path-like, caterpillar, bushy."""
    parents = [0, 0]
    for i in range(2, n + 1):
        if shape == "random":
            parents.append(rng.randint(1, i - 1))
        elif shape == "path":
            parents.append(max(1, i - rng.randint(1, 3)))
        elif shape == "caterpillar":
            parents.append(i - 1 if rng.random() < 0.5 else max(1, i - rng.randint(2, 5)))
        else:  # bushy: attach near the root
            parents.append(rng.randint(1, max(1, min(i - 1, 50))))
    return parents


def _render(n, parents, rng, w_max):
    labels = list(range(1, n + 1))
    rng.shuffle(labels)
    edges = []
    for i in range(2, n + 1):
        u, v = labels[i - 1], labels[parents[i] - 1]
        if rng.random() < 0.5:
            u, v = v, u
        edges.append(f"{u} {v} {rng.randint(1, w_max)}")
    rng.shuffle(edges)
    return "\n".join([str(n), *edges]) + "\n"


def generate(method: str, rng: random.Random) -> str:
    shape = rng.choice(["random", "path", "caterpillar", "bushy"])
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:
            return "1\n"
        if case == 1:
            return f"2\n1 2 {rng.randint(1, W_MAX)}\n"
        if case == 2:  # heavy edge hidden behind many light ones
            return "6\n1 2 1\n2 3 1\n3 4 1\n1 5 1\n5 6 100\n"
        if case == 3:  # path with maximal weights
            n = rng.randint(3, 8)
            return "\n".join([str(n)] + [f"{i} {i + 1} {W_MAX}" for i in range(1, n)]) + "\n"
        return "5\n1 2 3\n1 3 3\n1 4 3\n1 5 3\n"  # star, all ties
    if method == "small":
        n = rng.randint(1, 10)
        return _render(n, _parents(n, shape, rng), rng, rng.choice([1, 10, 100]))
    if method == "sample":
        n = rng.randint(50, 3000)
        return _render(n, _parents(n, shape, rng), rng, rng.choice([10, W_MAX]))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        return _render(n, _parents(n, shape, rng), rng, W_MAX)
    raise ValueError(f"unknown method {method!r}")
