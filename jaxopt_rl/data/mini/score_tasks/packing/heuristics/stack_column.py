# Baseline: every panel at the left edge, one on top of the other in input order; the length is the sum of heights (expected rank 4).


def solve(width, widths, heights):
    out = []
    y = 0
    for h in heights:
        out.append(f"0 {y}")
        y += h
    return out
