# Baseline: visit the stops in the order they are listed, which for these instances is a random order (expected rank 4).


def solve(xs, ys):
    return [str(i) for i in range(len(xs))]
