"""Input generator for mini-014 (birdsong motifs: count overlapping pattern occurrences)."""
import random
import string

S_MAX = 1_000_000
P_MAX = 1000


def _render(s, p):
    return f"{s}\n{p}\n"


def _song(n, rng):
    """A text of length n of one of several shapes, and a motif that often occurs in it."""
    shape = rng.randrange(4)
    if shape == 0:  # random syllables over a small alphabet
        alphabet = string.ascii_lowercase[: rng.choice([2, 3, 26])]
        s = "".join(rng.choices(alphabet, k=n))
        start = rng.randrange(n)
        p = s[start:start + rng.randint(1, min(P_MAX, 12))]
    elif shape == 1:  # a highly repetitive song: one short call repeated
        call = "".join(rng.choices("ab", k=rng.randint(1, 4)))
        s = (call * (n // len(call) + 1))[:n]
        p = (call * (P_MAX // len(call) + 1))[: rng.randint(1, P_MAX)]
    elif shape == 2:  # a long motif planted into random noise
        p = "".join(rng.choices("ab", k=rng.randint(50, P_MAX)))
        parts = []
        while sum(map(len, parts)) < n:
            parts.append("".join(rng.choices("ab", k=rng.randint(0, 3 * len(p)))))
            parts.append(p)
        s = "".join(parts)[:n]
    else:  # the motif almost matches everywhere: a^(m-1) b inside a long run of a
        m = rng.randint(2, P_MAX)
        s = "a" * (n - 1) + "b"
        p = "a" * (m - 1) + "b"
    return s, p or "a"


def generate(method: str, rng: random.Random) -> str:
    if method == "edge":
        case = rng.randrange(6)
        if case == 0:  # one letter each
            return _render(rng.choice("ab"), rng.choice("ab"))
        if case == 1:  # motif longer than the song
            return _render("ab" * rng.randint(1, 3), "ab" * 4)
        if case == 2:  # motif equals the whole song
            s = "".join(rng.choices("xyz", k=rng.randint(1, 10)))
            return _render(s, s)
        if case == 3:  # overlapping repeats
            k = rng.randint(1, 3)
            return _render("a" * rng.randint(k, 12), "a" * k)
        if case == 4:  # motif only at the very end
            p = "".join(rng.choices("ab", k=rng.randint(1, 4)))
            return _render("c" * rng.randint(0, 8) + p, p)
        return _render("abab" * rng.randint(1, 4) + "a", "aba")
    if method == "small":
        s = "".join(rng.choices("ab", k=rng.randint(1, 12)))
        return _render(s, "".join(rng.choices("ab", k=rng.randint(1, 3))))
    if method == "sample":
        return _render(*_song(rng.randint(100, 5000), rng))
    if method == "large":
        return _render(*_song(max(1, int(S_MAX * 5 ** (rng.random() - 1))), rng))
    raise ValueError(f"unknown method {method!r}")
