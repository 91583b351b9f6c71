"""Input generator for mini-022 (calculator tape: evaluate + - * ( ) expressions modulo 1e9+7)."""
import random

LEN_MAX_LARGE = 200000
OPS = "+-*"


def _expr(rng, budget, depth, max_depth, num_max, space, paren_prob=0.3, inner_max=None):
    """A random expression of roughly `budget` characters (iterative over terms, recursive over nesting)."""
    parts = []
    used = 0
    while True:
        if depth < max_depth and budget - used > 12 and rng.random() < paren_prob:
            room = max(5, (budget - used) // 2)
            inner_budget = rng.randint(5, room if inner_max is None else min(room, inner_max))
            inner = _expr(
                rng, inner_budget, depth + 1, max_depth, num_max, space, paren_prob, inner_max
            )
            term = "(" + inner + ")"
        else:
            term = str(rng.randint(0, num_max))
        parts.append(term)
        used += len(term) + 1
        if used >= budget:
            break
        parts.append(rng.choice(OPS) if not space else f" {rng.choice(OPS)} ")
    return "".join(parts)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(7)
        return [
            "0\n",
            "1000000007\n",
            "3-5\n",  # negative value must be reported modulo 1e9+7
            "10-4-3-2\n",  # minus is left-associative
            "((((((7))))))\n",
            "999999999*999999999*999999999\n",
            "2*(3-10)*5-1\n",
        ][case]
    if method == "small":
        return _expr(rng, rng.randint(1, 20), 0, 3, 20, rng.random() < 0.3) + "\n"
    if method == "sample":
        num_max = rng.choice([9, 1000, 10**9])
        return _expr(rng, rng.randint(50, 3000), 0, 20, num_max, rng.random() < 0.2) + "\n"
    if method == "large":
        budget = int(LEN_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        # Many small groups: a large number of parenthesis pairs, as in machine-made formulas.
        num_max = rng.choice([9, 99, 10**9])
        inner_max = rng.choice([12, 40, 200])
        return _expr(rng, budget, 0, rng.randint(5, 60), num_max, False, 0.6, inner_max) + "\n"
    raise ValueError(f"unknown method {method!r}")
