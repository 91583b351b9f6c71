"""Input generator for mini-025 (skyline view: index of the next strictly taller building to the right)."""
import random

N_MAX_LARGE = 200000
H_MAX = 10**9
SCAN_BUDGET = 2 * 10**7  # bounds n * run length, so that direct scanning stays within seconds


def _runs(n, max_run, rng, h_max=H_MAX):
    """Heights made of decreasing runs (long runs make naive right-scans expensive)."""
    heights = []
    while len(heights) < n:
        length = rng.randint(1, max_run)
        top = rng.randint(h_max // 2, h_max)
        step = max(1, top // (length + 1))
        heights.extend(max(1, top - i * step - rng.randint(0, step // 2)) for i in range(length))
    return heights[:n]


def _render(heights):
    return f"{len(heights)}\n{' '.join(map(str, heights))}\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render([rng.randint(1, H_MAX)])
        if case == 1:  # all equal: nobody sees a strictly taller building
            return _render([5] * rng.randint(2, 8))
        if case == 2:  # strictly increasing
            return _render(list(range(1, rng.randint(3, 9))))
        if case == 3:  # strictly decreasing
            return _render(list(range(rng.randint(3, 9), 0, -1)))
        if case == 4:  # plateaus before a taller building
            return _render([3, 3, 1, 3, 4, 4, 2, 5])
        return _render([2, 1, 1, 1, 3])
    if method == "small":
        n = rng.randint(1, 12)
        return _render([rng.randint(1, rng.choice([3, 10, 100])) for _ in range(n)])
    if method == "sample":
        n = rng.randint(100, 5000)
        if rng.random() < 0.5:
            return _render([rng.randint(1, rng.choice([50, H_MAX])) for _ in range(n)])
        return _render(_runs(n, rng.randint(2, 200), rng))
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        max_run = max(2, int((SCAN_BUDGET // n) * rng.random()))
        return _render(_runs(n, max_run, rng))
    raise ValueError(f"unknown method {method!r}")
