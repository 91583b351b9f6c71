"""Hidden instances of the `packing` score task: 60 to 250 panels on a roll 100 to 1000 wide.

Instance `index` picks the family (index % 3): panels of independent random sizes, tall narrow
panels (bad for shelf methods that waste the space above short panels), and a perfect
rectangle of the roll's width guillotine-cut into n panels (its height is the optimum).
"""
import random


def _random_sizes(n, width, rng):
    return [(rng.randint(1, width // 2), rng.randint(1, 300)) for _ in range(n)]


def _tall_narrow(n, width, rng):
    panels = []
    for _ in range(n):
        if rng.random() < 0.6:
            panels.append((rng.randint(1, max(1, width // 10)), rng.randint(200, 1000)))
        else:
            panels.append((rng.randint(width // 10, width // 2), rng.randint(10, 150)))
    return panels


def _guillotine(n, width, rng):
    """Cut a width x H rectangle by repeated straight cuts of the largest piece."""
    height = rng.randint(width // 2, min(1000, 2 * width))
    pieces = [(width, height)]
    while len(pieces) < n:
        pieces.sort(key=lambda p: p[0] * p[1])
        w, h = pieces.pop()
        if (w >= h and w >= 2) or h < 2:
            cut = rng.randint(1, w - 1)
            pieces += [(cut, h), (w - cut, h)]
        else:
            cut = rng.randint(1, h - 1)
            pieces += [(w, cut), (w, h - cut)]
    return pieces


def generate(index: int, rng: random.Random) -> dict:
    n = rng.randint(60, 250)
    width = rng.randint(100, 1000)
    family = (_random_sizes, _tall_narrow, _guillotine)[index % 3]
    panels = family(n, width, rng)
    rng.shuffle(panels)
    return {"width": width, "widths": [w for w, _ in panels], "heights": [h for _, h in panels]}
