"""Input generator for mini-029 (echo words: number of palindromic substrings, counted by position)."""
import random
import string

N_MAX_LARGE = 70000


def _random_text(n, alphabet, rng):
    return [rng.choice(alphabet) for _ in range(n)]


def _palindromic_piece(length, rng, alphabet):
    kind = rng.randrange(3)
    if kind == 0:  # a run of one letter: about length^2 / 2 palindromes
        return [rng.choice(alphabet)] * length
    if kind == 1:  # period two: "abab..."
        a, b = rng.sample(alphabet, 2) if len(alphabet) > 1 else (alphabet[0], alphabet[0])
        return [a if i % 2 == 0 else b for i in range(length)]
    half = _random_text(length // 2, alphabet, rng)  # a word followed by its mirror image
    return half + half[::-1]


def _text(n, rng, alphabet_size, budget):
    """Random text with embedded palindromic pieces worth about `budget` extra palindromes."""
    alphabet = string.ascii_lowercase[:alphabet_size]
    chars = _random_text(n, alphabet, rng)
    while budget > 10 and n > 4:
        length = min(n, rng.randint(2, max(2, int((2 * budget) ** 0.5))))
        start = rng.randrange(n - length + 1)
        chars[start : start + length] = _palindromic_piece(length, rng, alphabet)
        budget -= length * length // 2
    return "".join(chars)


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        return [
            "a\n",
            "ab\n",
            "aa\n",
            "a" * rng.randint(3, 30) + "\n",
            "abba\n",
            "abcde\n",
        ][case]
    if method == "small":
        n = rng.randint(1, 12)
        return "".join(rng.choice("abc"[: rng.randint(1, 3)]) for _ in range(n)) + "\n"
    if method == "sample":
        n = rng.randint(50, 2000)
        return _text(n, rng, rng.randint(1, 26), rng.choice([0, 1000, 100000])) + "\n"
    if method == "large":
        n = int(N_MAX_LARGE * 5 ** (rng.random() - 1))  # log-uniform in [20%, 100%] of the max
        budget = int(10 ** rng.uniform(4, 7.3))  # extra palindromes from embedded pieces
        return _text(n, rng, rng.randint(2, 26), budget) + "\n"
    raise ValueError(f"unknown method {method!r}")
