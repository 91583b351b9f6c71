# Nearest neighbour: from stop 0 always drive to the closest unvisited stop (ties: lowest number), O(n^2) (expected rank 2).


def solve(xs, ys):
    n = len(xs)
    unvisited = set(range(1, n))
    tour = [0]
    x, y = xs[0], ys[0]
    while unvisited:
        nxt = min(unvisited, key=lambda j: ((xs[j] - x) ** 2 + (ys[j] - y) ** 2, j))
        unvisited.remove(nxt)
        tour.append(nxt)
        x, y = xs[nxt], ys[nxt]
    return [str(i) for i in tour]
