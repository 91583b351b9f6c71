# Nearest-neighbour tour improved by 2-opt local search over 10-nearest-neighbour candidate lists until no move shortens it (expected rank 1).
import math

CANDIDATES = 10


def nearest_neighbour_tour(xs, ys):
    n = len(xs)
    unvisited = set(range(1, n))
    tour = [0]
    x, y = xs[0], ys[0]
    while unvisited:
        nxt = min(unvisited, key=lambda j: ((xs[j] - x) ** 2 + (ys[j] - y) ** 2, j))
        unvisited.remove(nxt)
        tour.append(nxt)
        x, y = xs[nxt], ys[nxt]
    return tour


def solve(xs, ys):
    n = len(xs)
    if n < 5:
        return [str(i) for i in range(n)]

    def dist(a, b):
        return math.hypot(xs[a] - xs[b], ys[a] - ys[b])

    near = [sorted((j for j in range(n) if j != i), key=lambda j: (dist(i, j), j))[:CANDIDATES]
            for i in range(n)]
    tour = nearest_neighbour_tour(xs, ys)
    pos = [0] * n
    for i, stop in enumerate(tour):
        pos[stop] = i

    def reverse(i, j):
        """Reverse tour positions i..j (cyclic, inclusive); the shorter side is flipped, which
        leaves the same cycle."""
        length = (j - i) % n + 1
        if 2 * length > n:
            i, j, length = (j + 1) % n, (i - 1) % n, n - length
        for _ in range(length // 2):
            a, b = tour[i], tour[j]
            tour[i], tour[j] = b, a
            pos[b], pos[a] = i, j
            i = (i + 1) % n
            j = (j - 1) % n

    improved = True
    while improved:
        improved = False
        for a in range(n):
            i = pos[a]
            succ, pred = tour[(i + 1) % n], tour[i - 1]
            d_succ, d_pred = dist(a, succ), dist(pred, a)
            for c in near[a]:
                d_ac = dist(a, c)
                if d_ac >= d_succ and d_ac >= d_pred:
                    break
                j = pos[c]
                # replace (a, succ) + (c, succ_c) by (a, c) + (succ, succ_c)
                succ_c = tour[(j + 1) % n]
                if c != succ and succ_c != a and \
                        d_ac + dist(succ, succ_c) < d_succ + dist(c, succ_c) - 1e-7:
                    reverse((i + 1) % n, j)
                    improved = True
                    break
                # replace (pred, a) + (pred_c, c) by (c, a) + (pred_c, pred)
                pred_c = tour[j - 1]
                if c != pred and pred_c != a and \
                        d_ac + dist(pred_c, pred) < d_pred + dist(pred_c, c) - 1e-7:
                    reverse(j, (i - 1) % n)
                    improved = True
                    break
    return [str(i) for i in tour]
