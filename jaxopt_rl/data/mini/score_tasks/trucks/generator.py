"""Hidden instances of the `trucks` score task: 30 to 80 parcel weights whose scale spans four
orders of magnitude across instances (RiVER's scale-dominance setting: an objective whose
range on one instance dwarfs every other instance's).

Instance `index` sets the scale, 10 ** (2 + index % 5), and the family ((index // 5) % 2):
weights uniform in [1, scale], or a few heavy parcels among many light ones.
"""


def generate(index: int, rng) -> dict:
    n = rng.randint(30, 80)
    scale = 10 ** (2 + index % 5)
    if (index // 5) % 2 == 0:
        weights = [rng.randint(1, scale) for _ in range(n)]
    else:
        heavy = rng.randint(3, 7)
        weights = ([rng.randint(scale // 2, scale) for _ in range(heavy)]
                   + [rng.randint(1, max(1, scale // 20)) for _ in range(n - heavy)])
        rng.shuffle(weights)
    return {"weights": weights}
