"""Hidden instances of the `coloring` score task: graphs of three families, 120 to 300 vertices.

Instance `index` picks the family (index % 3): uniform random graphs G(n, p), random geometric
graphs (points in the unit square joined when close), and graphs with a planted k-colouring
(edges only between hidden classes), where first-fit greedy is far from the optimum.
"""
import random


def _uniform(n, rng):
    p = rng.uniform(0.05, 0.25)
    return [[u, v] for u in range(n) for v in range(u + 1, n) if rng.random() < p]


def _geometric(n, rng):
    points = [(rng.random(), rng.random()) for _ in range(n)]
    radius = rng.uniform(0.08, 0.18)
    r2 = radius * radius
    edges = []
    for u in range(n):
        ux, uy = points[u]
        for v in range(u + 1, n):
            dx, dy = points[v][0] - ux, points[v][1] - uy
            if dx * dx + dy * dy < r2:
                edges.append([u, v])
    return edges


def _planted(n, rng):
    k = rng.randint(4, 10)
    hidden = [rng.randrange(k) for _ in range(n)]
    p = rng.uniform(0.15, 0.4)
    return [
        [u, v]
        for u in range(n)
        for v in range(u + 1, n)
        if hidden[u] != hidden[v] and rng.random() < p
    ]


def generate(index: int, rng: random.Random) -> dict:
    n = rng.randint(120, 300)
    family = (_uniform, _geometric, _planted)[index % 3]
    edges = family(n, rng)
    rng.shuffle(edges)
    return {"n": n, "edges": edges}
