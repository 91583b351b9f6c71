# Angular sweep: visit the stops by polar angle around their centroid (ties by distance), like a radar beam (expected rank 3).
import math


def solve(xs, ys):
    n = len(xs)
    cx, cy = sum(xs) / n, sum(ys) / n
    order = sorted(range(n), key=lambda i: (math.atan2(ys[i] - cy, xs[i] - cx),
                                            math.hypot(xs[i] - cx, ys[i] - cy), i))
    return [str(i) for i in order]
