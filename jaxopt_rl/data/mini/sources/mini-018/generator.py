"""Input generator for mini-018 (ticket machine: number of ways to pay an amount, mod 1e9+7)."""
import random

S_MAX_LARGE = 70000


def _render(amount, coins):
    return f"{len(coins)} {amount}\n{' '.join(map(str, coins))}\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:
            return _render(1, [1])
        if case == 1:  # every coin larger than the amount
            return _render(rng.randint(1, 5), [6, 7, 200000])
        if case == 2:  # only one coin, amount not a multiple of it
            return _render(rng.randint(1, 50), [rng.randint(2, 9)])
        if case == 3:  # answer far above the modulus
            return _render(rng.randint(3000, 5000), list(range(1, 31)))
        if case == 4:  # unsorted coins including ones above the amount
            return _render(20, [25, 3, 17, 1, 199999, 8])
        return _render(200000, [1])
    if method == "small":
        amount = rng.randint(1, 30)
        coins = rng.sample(range(1, 40), rng.randint(1, 5))
        return _render(amount, coins)
    if method == "sample":
        amount = rng.randint(100, 3000)
        coins = rng.sample(range(1, amount + 1), rng.randint(1, 25))
        return _render(amount, coins)
    if method == "large":
        amount = int(S_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        k = rng.randint(40, 100)
        coins = set(rng.sample(range(1, 100), rng.randint(1, 10)))
        while len(coins) < k:  # log-uniform values: many small coins make long DP sweeps
            coins.add(int(amount ** rng.random()))
        coins = list(coins)
        rng.shuffle(coins)
        return _render(amount, coins)
    raise ValueError(f"unknown method {method!r}")
