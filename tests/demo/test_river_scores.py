"""The RiVER demo's held-out measures against slow, obviously-correct references."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.demo.river_scores import (
    best_so_far,
    bootstrap_difference,
    bootstrap_mean,
    heuristic_of,
    normalised_scores,
    verdict,
)


def _q_reference(score, valid, refs, objective):
    """Instance by instance, as the definition reads: 1 = best reference, 0 = worst."""
    out = []
    for i, (s, ok) in enumerate(zip(score, valid)):
        column = [r[i] for r in refs]
        better = (lambda a, b: a < b) if objective == "minimize" else (lambda a, b: a > b)
        best = min(column) if objective == "minimize" else max(column)
        worst = max(column) if objective == "minimize" else min(column)
        if not ok:
            out.append(0.0)
        elif best == worst:
            out.append(0.0 if better(best, s) else 1.0)
        else:
            out.append((s - worst) / (best - worst))
    return out


def test_a_hand_worked_minimisation():
    refs = [[10.0, 100.0], [20.0, 300.0]]  # best 10 and 100, worst 20 and 300
    q = normalised_scores([15.0, 50.0], [True, True], refs, [[True] * 2] * 2, "minimize")
    np.testing.assert_allclose(q, [0.5, 1.25])
    q = normalised_scores([15.0, 50.0], [False, True], refs, [[True] * 2] * 2, "minimize")
    assert q[0] == 0.0  # invalid: the worst reference


scores = st.floats(-1e6, 1e6, allow_nan=False, allow_subnormal=False)


@settings(max_examples=200, deadline=None)
@given(data=st.data(), instances=st.integers(1, 5), refs=st.integers(2, 4),
       objective=st.sampled_from(["minimize", "maximize"]))
def test_normalised_scores_match_the_definition_and_ignore_each_instances_unit(
        data, instances, refs, objective):
    ref_HM = [data.draw(st.lists(scores, min_size=instances, max_size=instances))
              for _ in range(refs)]
    score = data.draw(st.lists(scores, min_size=instances, max_size=instances))
    valid = data.draw(st.lists(st.booleans(), min_size=instances, max_size=instances))
    ok_HM = [[True] * instances] * refs
    q = normalised_scores(score, valid, ref_HM, ok_HM, objective)
    np.testing.assert_allclose(q, _q_reference(score, valid, ref_HM, objective), rtol=1e-9,
                               atol=1e-9)
    # Scale dominance cannot enter: rescaling one instance's objective (its unit) leaves every
    # q unchanged. Powers of two keep the rescaled floats exact, so equality is exact too.
    a = 2.0 ** data.draw(st.integers(-20, 20))
    i = data.draw(st.integers(0, instances - 1))
    rescale = lambda row: [v * a if k == i else v for k, v in enumerate(row)]  # noqa: E731
    q2 = normalised_scores(rescale(score), valid, [rescale(r) for r in ref_HM], ok_HM, objective)
    np.testing.assert_allclose(q2, q, rtol=1e-12, atol=0)


def test_a_failed_reference_is_refused_not_guessed():
    with pytest.raises(ValueError, match="reference heuristic failed on held-out instance"):
        normalised_scores([1.0], [True], [[1.0], [2.0]], [[True], [False]], "minimize")


def test_an_adversarial_score_cannot_earn_through_nan_or_infinity():
    refs, ok = [[1.0], [2.0]], [[True], [True]]
    for bad in (float("nan"), float("inf"), float("-inf")):
        # a checker that returned a non-finite value for a "valid" answer earns the worst
        assert normalised_scores([bad], [True], refs, ok, "minimize")[0] == 0.0


@given(st.lists(st.tuples(st.integers(1, 6), st.floats(-5, 5)), max_size=20))
def test_best_so_far_is_the_running_max_of_what_was_sampled(pairs):
    curve = best_so_far(pairs, 6)
    for t in range(1, 7):
        seen = [s for step, s in pairs if step <= t]
        if seen:
            assert curve[t - 1] == max(seen)
        else:
            assert np.isnan(curve[t - 1])


def test_best_so_far_refuses_a_step_outside_the_run():
    with pytest.raises(ValueError, match=r"outside 1\.\.3"):
        best_so_far([(4, 1.0)], 3)


def test_bootstrap_of_a_constant_and_of_identical_runs():
    assert bootstrap_mean(np.full((3, 4, 5), 0.25), 200, 0) == (0.25, 0.25, 0.25)
    q = np.random.default_rng(0).random((3, 4, 5))
    assert bootstrap_difference(q, q, 200, 0) == (0.0, 0.0, 0.0)
    mean, low, high = bootstrap_mean(q, 500, 0)
    assert mean == pytest.approx(q.mean()) and low < mean < high
    # a uniformly better run: every resample agrees on the sign
    _, low, _ = bootstrap_difference(q + 0.1, q, 500, 0)
    assert low == pytest.approx(0.1)


def test_verdicts_read_the_interval():
    assert verdict(0.01, 0.2) == "held"
    assert verdict(-0.2, -0.01).startswith("did not hold")
    assert verdict(-0.1, 0.1).startswith("inconclusive")


def test_a_heuristic_is_recognised_through_blank_lines_and_trailing_spaces_only():
    heuristics = {"greedy": "def solve(w):\n    return ['0'] * len(w)\n"}
    assert heuristic_of("\ndef solve(w):   \n\n    return ['0'] * len(w)", heuristics) == "greedy"
    assert heuristic_of("def solve(w):\n    return ['1'] * len(w)\n", heuristics) is None
    assert heuristic_of(None, heuristics) is None
