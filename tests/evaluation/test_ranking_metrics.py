"""The 17 ranking metrics against loops written from Appendix D.3; directions; padding never
matters."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.evaluation.ranking_metrics import RANKING_METRICS
from tests.rewards import reference_impl as ref

B, T, H = 4, 7, 4
NAMES = sorted(RANKING_METRICS)


@st.composite
def batches(draw):
    cand = draw(ref.durations((B, T)))
    refs = draw(ref.durations((B, T, H)))
    ref_mask = draw(ref.masks((B, T, H)))
    test_mask = draw(ref.masks((B, T)))
    refs = ref.fill_padding(refs, ref_mask, draw(ref.garbage((B, T, H))))
    cand = ref.fill_padding(cand, test_mask, draw(ref.garbage((B, T))))
    return cand, refs, ref_mask, test_mask


def test_the_registry_has_the_seventeen_metrics():
    assert len(RANKING_METRICS) == 17
    higher = {name for name, metric in RANKING_METRICS.items() if metric.higher_is_better}
    assert higher == {"top25_share", "top50_share", "win_rate_mean", "win_rate_median"}


@pytest.mark.parametrize("name", NAMES)
@given(batches())
def test_metric_matches_loop(name, batch):
    cand, refs, ref_mask, test_mask = batch
    got = np.asarray(RANKING_METRICS[name](cand, refs, ref_mask, test_mask))
    want = [
        ref.to_float(ref.ranking_metric_row(name, cand[i], refs[i], ref_mask[i], test_mask[i]))
        for i in range(B)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    defined = got[~np.isnan(got)]
    assert np.all((defined >= 0) & (defined <= 1))


@pytest.mark.parametrize("name", ["mean_percentile", "total_duration_percentile", "win_rate_mean"])
@given(batches())
def test_min_tie_rule_matches_loop(name, batch):
    cand, refs, ref_mask, test_mask = batch
    got = np.asarray(RANKING_METRICS[name](cand, refs, ref_mask, test_mask, ties="min"))
    want = [
        ref.to_float(
            ref.ranking_metric_row(name, cand[i], refs[i], ref_mask[i], test_mask[i], "min")
        )
        for i in range(B)
    ]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)


@pytest.mark.parametrize("name", NAMES)
@given(batches(), st.data())
def test_padding_never_changes_a_metric(name, batch, data):
    cand, refs, ref_mask, test_mask = batch
    other_refs = ref.fill_padding(refs, ref_mask, data.draw(ref.garbage((B, T, H))))
    other_cand = ref.fill_padding(cand, test_mask, data.draw(ref.garbage((B, T))))
    metric = RANKING_METRICS[name]
    np.testing.assert_array_equal(
        np.asarray(metric(cand, refs, ref_mask, test_mask)),
        np.asarray(metric(other_cand, other_refs, ref_mask, test_mask)),
    )


def test_fast_candidate_is_best_on_every_metric():
    # durations grow with test difficulty for every reference: every slope is positive
    difficulty = np.linspace(1, 3, T, dtype=np.float32)[:, None]
    refs = np.broadcast_to(difficulty * np.linspace(1.0, 1.5, H, dtype=np.float32), (B, T, H))
    mask = np.ones((B, T, H), bool)
    tests = np.ones((B, T), bool)
    fast = np.full((B, T), 0.01, np.float32)
    for name, metric in RANKING_METRICS.items():
        values = np.asarray(metric(fast, refs, mask, tests))
        # (a flat candidate curve has slope 0, below every reference's positive slope)
        best = 1.0 if metric.higher_is_better else 0.0
        np.testing.assert_array_equal(values, best, err_msg=name)


def test_trimmed_mean_drops_a_tenth_at_each_end():
    # 20 tests, one reference at 1 s: candidate 0.5 s on 3 tests (p = 0), 2 s on 17 (p = 1);
    # m = floor(0.1 * 20) = 2 drops two fast and two slow tests: 15 of the 16 left are slow
    refs = np.ones((1, 20, 1), np.float32)
    cand = np.array([[0.5] * 3 + [2.0] * 17], np.float32)
    metric = RANKING_METRICS["trimmed_mean_percentile"]
    value = metric(cand, refs, np.ones((1, 20, 1), bool), np.ones((1, 20), bool), ties="min")
    assert float(value[0]) == pytest.approx(15 / 16)
    mean = RANKING_METRICS["mean_percentile"](cand, refs, refs > 0, cand > 0)
    assert float(mean[0]) == pytest.approx(17 / 20)


def test_trimmed_mean_needs_five_tests():
    refs = np.ones((1, 4, 2), np.float32)
    cand = np.full((1, 4), 2.0, np.float32)
    metric = RANKING_METRICS["trimmed_mean_percentile"]
    assert np.isnan(metric(cand, refs, np.ones((1, 4, 2), bool), np.ones((1, 4), bool))[0])


def test_unknown_tie_rule_is_named():
    x = np.ones((1, 2), np.float32)
    with pytest.raises(ValueError, match="ties='dense'"):
        RANKING_METRICS["mean_percentile"](x, x[..., None], x[..., None] > 0, x > 0, ties="dense")
