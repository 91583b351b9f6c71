"""Input generator for mini-011 (manuscript collation: Levenshtein edit distance)."""
import random
import string

LEN_MAX = 2000


def _word(n, alphabet, rng):
    return "".join(rng.choice(alphabet) for _ in range(n))


def _mutate(s, edits, alphabet, rng):
    """s with `edits` random insertions, deletions, substitutions and adjacent swaps."""
    chars = list(s)
    for _ in range(edits):
        op = rng.randrange(4)
        i = rng.randrange(len(chars) + 1)
        if op == 0 or len(chars) <= 1:
            chars.insert(i, rng.choice(alphabet))
        elif op == 1:
            del chars[min(i, len(chars) - 1)]
        elif op == 2:
            chars[min(i, len(chars) - 1)] = rng.choice(alphabet)
        else:
            j = min(i, len(chars) - 2)
            chars[j], chars[j + 1] = chars[j + 1], chars[j]
    return "".join(chars) or rng.choice(alphabet)


def _pair(n, rng):
    alphabet = string.ascii_lowercase[: rng.choice([2, 4, 26])]
    a = _word(n, alphabet, rng)
    if rng.random() < 0.5:  # two copies of one text: few differences
        b = _mutate(a, rng.randint(0, max(1, n // rng.choice([5, 20, 100]))), alphabet, rng)
    else:  # unrelated texts of different lengths
        b = _word(max(1, int(n * rng.uniform(0.5, 1.0))), alphabet, rng)
    if rng.random() < 0.5:
        a, b = b, a
    return f"{a[:LEN_MAX]}\n{b[:LEN_MAX]}\n"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # single letters
            return f"{rng.choice('ab')}\n{rng.choice('ab')}\n"
        if case == 1:  # identical
            s = _word(rng.randint(1, 10), "abc", rng)
            return f"{s}\n{s}\n"
        if case == 2:  # one letter against a long word
            s = _word(rng.randint(2, 12), "xyz", rng)
            return f"{rng.choice('xyz')}\n{s}\n" if rng.random() < 0.5 else f"{s}\n{rng.choice('xy')}\n"
        if case == 3:  # adjacent swaps only
            s = _word(rng.randint(2, 10), "abcd", rng)
            chars = list(s)
            for i in range(0, len(chars) - 1, 2):
                chars[i], chars[i + 1] = chars[i + 1], chars[i]
            return f"{s}\n{''.join(chars)}\n"
        if case == 4:  # reversal
            s = _word(rng.randint(2, 10), "ab", rng)
            return f"{s}\n{s[::-1]}\n"
        return f"{'a' * LEN_MAX}\n{'b' * rng.randint(1, LEN_MAX)}\n"  # nothing in common
    if method == "small":
        alphabet = "abc"[: rng.randint(1, 3)]
        return f"{_word(rng.randint(1, 8), alphabet, rng)}\n{_word(rng.randint(1, 8), alphabet, rng)}\n"
    if method == "sample":
        return _pair(rng.randint(20, 300), rng)
    if method == "large":
        return _pair(max(1, int(LEN_MAX * 5 ** (rng.random() - 1))), rng)
    raise ValueError(f"unknown method {method!r}")
