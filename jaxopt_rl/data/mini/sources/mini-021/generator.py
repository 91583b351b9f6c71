"""Input generator for mini-021 (headline words: k most frequent words, ties by alphabetical order)."""
import random
import string

N_MAX_LARGE = 300000


def _vocabulary(size, rng, max_len=8):
    words = set()
    while len(words) < size:
        length = rng.randint(1, max_len)
        words.add("".join(rng.choice(string.ascii_lowercase[:6]) for _ in range(length)))
    return sorted(words)


def _text(words, n, rng, zipf=True):
    """n words drawn with roughly Zipf-like frequencies (many ties among rare words)."""
    order = words[:]
    rng.shuffle(order)
    weights = [1.0 / (i + 1) for i in range(len(order))] if zipf else None
    chosen = rng.choices(order, weights=weights, k=n)
    lines, i = [], 0
    while i < n:
        step = rng.randint(1, 12)
        lines.append(" ".join(chosen[i : i + step]))
        i += step
    return lines


def _render(k, n, lines):
    return f"{n} {k}\n" + "\n".join(lines) + "\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(5)
        if case == 0:
            return _render(1, 1, ["a"])
        if case == 1:  # k larger than the number of distinct words
            return _render(10, 4, ["b a", "b c"])
        if case == 2:  # all counts equal: pure alphabetical order
            words = _vocabulary(6, rng, 3)
            return _render(rng.randint(1, 6), 12, [" ".join(words + words[::-1])])
        if case == 3:  # prefixes of each other
            return _render(3, 6, ["ab a abc", "a ab abc"])
        return _render(2, 5, ["zz", "y", "zz", "y", "x"])
    if method == "small":
        n = rng.randint(1, 15)
        words = _vocabulary(rng.randint(1, 6), rng, 3)
        return _render(rng.randint(1, 5), n, _text(words, n, rng, rng.random() < 0.5))
    if method == "sample":
        n = rng.randint(100, 3000)
        words = _vocabulary(rng.randint(5, 300), rng)
        return _render(rng.randint(1, 50), n, _text(words, n, rng))
    if method == "large":
        scale = 5 ** (rng.random() - 1)  # log-uniform in [20%, 100%] of the max
        n = int(N_MAX_LARGE * scale)
        words = _vocabulary(int(600 * scale), rng)
        return _render(rng.randint(1, 200), n, _text(words, n, rng))
    raise ValueError(f"unknown method {method!r}")
