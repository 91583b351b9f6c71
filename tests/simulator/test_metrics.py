"""Curve diagnostics against slow references: loops, scipy's Spearman, and a least-squares
check of the clipped-linear fit by scipy's optimiser and a dense parameter grid."""

import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.optimize
import scipy.stats
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.simulator import clipped_linear_fit, diagnostics


def slow_loss(a, b, x, c):
    return sum((min(1.0, max(0.0, a * xi + b)) - ci) ** 2 for xi, ci in zip(x, c))


def slow_fit(x, c):
    """The enumeration of the fit's candidates, written with loops and lstsq."""
    n = len(x)
    candidates = [(0.0, 0.0), (0.0, 1.0), (0.0, min(1.0, max(0.0, sum(c) / n)))]
    for mirror in (False, True):
        y = [1.0 - v for v in c] if mirror else list(c)
        rising = []
        for lo in range(n):
            for hi in range(lo + 1, n):
                design = np.array([[x[i], 1.0] for i in range(lo, hi + 1)])
                (a, b), *_ = np.linalg.lstsq(design, np.array(y[lo:hi + 1]), rcond=None)
                rising.append((a, b))
        for k in range(n):
            t = min(1.0, max(0.0, y[k]))
            slopes = [0.0]
            if k > 0:
                slopes.append(t / (x[k] - x[k - 1]))
            if k < n - 1:
                slopes.append((1.0 - t) / (x[k + 1] - x[k]))
            a = max(slopes)
            rising.append((a, t - a * x[k]))
        for k in range(1, n):
            a = 1.0 / (x[k] - x[k - 1])
            rising.append((a, -a * x[k - 1]))
        candidates += [(-a, 1.0 - b) if mirror else (a, b) for a, b in rising]
    losses = [slow_loss(a, b, x, c) for a, b in candidates]
    best = min(losses)
    near = [(abs(a), abs(b), a, b) for (a, b), loss in zip(candidates, losses)
            if loss <= best + 1e-9 * (1 + best)]
    flattest = min(item[0] for item in near)
    a, b = min((item for item in near if item[0] <= flattest + 1e-12), key=lambda i: i[1])[2:]
    return a, b, best


def exact_windows(c, w):
    """The moving average of docs/design/simulator.md §2 in exact arithmetic (Fractions)."""
    return [sum(map(Fraction, c[i:i + w])) / w for i in range(len(c) - w + 1)]


def exact_q_smooth(c, w):
    """spearman(x[:m], c~) on the exact window means: SciPy ranks their dense ranks, which
    order and tie exactly as the exact values do (a float cast could merge or split them)."""
    exact = exact_windows(c, w)
    distinct = sorted(set(exact))
    if len(distinct) < 2:
        return 0.0
    return float(scipy.stats.spearmanr(range(len(exact)),
                                       [distinct.index(v) for v in exact]).statistic)


def slow_diagnostics(x, c, w):
    n = len(c)
    m = n - w + 1
    smooth = [float(v) for v in exact_windows(c, w)]
    a, _, _ = slow_fit(x, c)

    def spearman(u, v):
        if len(set(u)) < 2 or len(set(v)) < 2:
            return 0.0
        return float(scipy.stats.spearmanr(u, v).statistic)

    return {
        "auc_raw": sum(c) / n,
        "auc_smooth": sum(smooth) / m,
        "steepness": a / (1 + abs(a)),
        "variance": sum((c[i + w - 1] - smooth[i]) ** 2 for i in range(m)) / m,
        "deviation": sum(abs(ci - xi) for ci, xi in zip(c, x)) / n,
        "q_raw": spearman(list(x), list(c)),
        "q_smooth": exact_q_smooth(c, w),
    }


curves = st.integers(5, 16).flatmap(lambda n: st.tuples(
    st.one_of(
        st.lists(st.floats(0, 1), min_size=n, max_size=n),
        st.lists(st.integers(0, 8).map(lambda k: k / 8), min_size=n, max_size=n),  # pass rates
    ),
    st.integers(1, n),
))


@given(curves)
def test_diagnostics_match_slow_reference(case):
    c, w = case
    x = np.linspace(0, 1, len(c))
    got = diagnostics(x, np.array(c), window=w)
    want = slow_diagnostics(list(x), c, w)
    assert set(got) == set(want)
    for name in want:
        assert isinstance(got[name], float)
        assert got[name] == pytest.approx(want[name], abs=1e-9), name


# values whose windows tie in exact arithmetic but not in float order (0.1 + 0.2 + 0.3 vs
# 0.3 + 0.1 + 0.2), thirds that never sum exactly, and a tiny value beside a large one
TIE_PRONE = (0.0, 0.1, 0.2, 0.3, 0.7, 1 / 3, 2 / 3, 0.5, 1.0, 1e-300, 5e-324, 1e-17)
tied_curves = st.integers(3, 16).flatmap(lambda n: st.tuples(
    st.lists(st.sampled_from(TIE_PRONE), min_size=n, max_size=n), st.integers(2, n)))


@given(tied_curves)
def test_q_smooth_ranks_exact_window_means(case):
    c, w = case
    got = diagnostics(np.linspace(0, 1, len(c)), np.array(c), window=w)["q_smooth"]
    assert got == pytest.approx(exact_q_smooth(c, w), abs=1e-12)


def test_q_smooth_on_a_hand_built_tied_curve():
    # windows of 3: 0.1+0.2+0.3, 0.2+0.3+0.1, 0.3+0.1+0.2, ... are all 0.6 exactly (seven of
    # them), then 0.2+0.3+0.4 = 0.9 and 0.3+0.4+0.5 = 1.2. Ranks of c~: seven tied at 4, then
    # 8 and 9, against steps 1..9: covariance 32, variances 60 and 32, rho = sqrt(8/15)
    c = [0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.1, 0.2, 0.3, 0.4, 0.5]
    got = diagnostics(np.linspace(0, 1, len(c)), np.array(c), window=3)["q_smooth"]
    assert got == pytest.approx(math.sqrt(8 / 15), abs=1e-12)
    assert got == pytest.approx(exact_q_smooth(c, 3), abs=1e-12)
    # windows equal after rounding but not exactly: 1 + 1e-300 > 1 + 0 > 0 + 0.5 -> rho = -1
    assert diagnostics(np.linspace(0, 1, 4), np.array([1e-300, 1.0, 0.0, 0.5]),
                       window=2)["q_smooth"] == -1.0


@given(curves)
def test_fit_is_least_squares(case):
    c, _ = case
    x = np.linspace(0, 1, len(c))
    a, b = clipped_linear_fit(x, np.array(c))
    loss = slow_loss(a, b, x, c)
    assert loss == pytest.approx(slow_fit(list(x), c)[2], abs=1e-9)
    # nothing found by a local optimiser from many starts, nor on a dense grid, is better
    for a0 in (-20, -3, -1, 0, 1, 3, 20):
        for b0 in (-2, 0, 0.5, 1, 2):
            res = scipy.optimize.minimize(lambda p: slow_loss(p[0], p[1], x, c), [a0, b0],
                                          method="Nelder-Mead",
                                          options={"xatol": 1e-10, "fatol": 1e-12})
            assert loss <= res.fun + 1e-9
    grid_a, grid_b = np.meshgrid(np.linspace(-30, 30, 241), np.linspace(-30, 31, 245))
    fit = np.clip(grid_a[..., None] * x + grid_b[..., None], 0, 1)
    assert loss <= ((fit - np.array(c)) ** 2).sum(-1).min() + 1e-9


@given(st.lists(curves, min_size=1, max_size=4))
def test_batch_equals_one_by_one(cases):
    n = len(cases[0][0])
    rows = [c for c, _ in cases if len(c) == n]
    x = np.linspace(0, 1, n)
    batch = diagnostics(x, np.array(rows), window=1)
    for k, row in enumerate(rows):
        one = diagnostics(x, np.array(row), window=1)
        for name, value in one.items():
            assert batch[name][k] == pytest.approx(value, abs=1e-12)


def test_known_curves():
    x = np.linspace(0, 1, 11)
    assert diagnostics(x, x)["steepness"] == pytest.approx(0.5)  # a = 1
    assert diagnostics(x, x)["deviation"] == pytest.approx(0.0)
    flat = diagnostics(x, np.zeros(11))
    assert flat["steepness"] == 0.0 and flat["q_raw"] == 0.0 and flat["auc_raw"] == 0.0
    step = diagnostics(x, (x >= 0.5).astype(float))
    assert step["steepness"] == pytest.approx(10 / 11)  # through (0.4, 0) and (0.5, 1)
    assert diagnostics(x, 1 - x)["q_raw"] == pytest.approx(-1.0)


@pytest.mark.parametrize("bad, match", [
    ({"window": 0}, "window"), ({"window": 12}, "window"), ({"window": 2.5}, "window"),
    ({"c": np.zeros(10)}, "shape"), ({"c": np.full(11, np.nan)}, "finite"),
    ({"c": np.zeros(1), "x": np.zeros(1)}, "at least 2"),
])
def test_bad_input(bad, match):
    args = {"x": np.linspace(0, 1, 11), "c": np.zeros(11), "window": 5, **bad}
    with pytest.raises(ValueError, match=match):
        diagnostics(args["x"], args["c"], window=args["window"])
