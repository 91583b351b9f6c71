"""Hidden instances of the `bonding` score task: atoms on a 1000 x 1000 plane with valences.

Instance `index` alternates uniform scatter (even) and clustered "droplets" (odd). The bond
length limit is set so that an atom has on average 4 to 12 atoms within reach; valence mixes vary
per instance (hydrogen-rich to carbon-rich).
"""
import math
import random

SIDE = 1000


def generate(index: int, rng: random.Random) -> dict:
    n = rng.randint(150, 400)
    if index % 2 == 0:
        points = [(rng.randint(0, SIDE), rng.randint(0, SIDE)) for _ in range(n)]
    else:
        centres = [(rng.uniform(100, 900), rng.uniform(100, 900)) for _ in range(rng.randint(3, 8))]
        spread = rng.uniform(40, 120)
        points = []
        for _ in range(n):
            cx, cy = rng.choice(centres)
            x = min(SIDE, max(0, round(rng.gauss(cx, spread))))
            y = min(SIDE, max(0, round(rng.gauss(cy, spread))))
            points.append((x, y))
    weights = [rng.uniform(0.5, 3.0) for _ in range(4)]  # frequency of valence 1, 2, 3, 4
    valences = rng.choices([1, 2, 3, 4], weights=weights, k=n)
    reach = rng.uniform(4, 12)  # mean number of atoms within reach under uniform scatter
    max_length = max(5, round(math.sqrt(reach * SIDE * SIDE / (math.pi * n))))
    atoms = [[x, y, v] for (x, y), v in zip(points, valences)]
    return {"n": n, "atoms": atoms, "max_length": max_length}
