"""Hidden instances of the `tour` score task: 150 to 400 stops on a 10 km x 10 km map.

Instance `index` picks the family (index % 3): uniformly scattered stops, stops clustered
around a few neighbourhood centres (Gaussian clouds), and stops on the crossings of a street
grid, a random subset of the crossings (many equal distances: ties for greedy methods).
"""
import random

SIDE = 10_000


def _clip(v):
    return max(0, min(SIDE, round(v)))


def _uniform(n, rng):
    return [(rng.randint(0, SIDE), rng.randint(0, SIDE)) for _ in range(n)]


def _clustered(n, rng):
    centres = [(rng.uniform(1000, 9000), rng.uniform(1000, 9000)) for _ in range(rng.randint(3, 8))]
    spread = rng.uniform(200, 900)
    points = []
    for _ in range(n):
        cx, cy = rng.choice(centres)
        points.append((_clip(rng.gauss(cx, spread)), _clip(rng.gauss(cy, spread))))
    return points


def _street_grid(n, rng):
    step = rng.choice([250, 400, 500])
    crossings = [(x, y) for x in range(0, SIDE + 1, step) for y in range(0, SIDE + 1, step)]
    return rng.sample(crossings, n)


def generate(index: int, rng: random.Random) -> dict:
    n = rng.randint(150, 400)
    family = (_uniform, _clustered, _street_grid)[index % 3]
    points = family(n, rng)
    rng.shuffle(points)
    return {"xs": [x for x, _ in points], "ys": [y for _, y in points]}
