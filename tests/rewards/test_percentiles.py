"""Per-test percentiles, QAR and QP against the slow loops of `reference_impl`, plus the spec's
properties: monotone invariance, range, saturation at 0, padding never matters, and the
per-problem fast path equal to the `[B, T, H]` form."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.rewards import percentiles
from tests.rewards import reference_impl as ref

B, T, H, P = 6, 5, 4, 3
TIES = pytest.mark.parametrize("ties", ["min", "average"])


@st.composite
def batches(draw, b=B, t=T, h=H):
    """A padded batch with references per rollout; padding holds garbage."""
    cand = draw(ref.durations((b, t)))
    refs = draw(ref.durations((b, t, h)))
    ref_mask = draw(ref.masks((b, t, h)))
    test_mask = draw(ref.masks((b, t)))
    refs = ref.fill_padding(refs, ref_mask, draw(ref.garbage((b, t, h))))
    cand = ref.fill_padding(cand, test_mask, draw(ref.garbage((b, t))))
    return cand, refs, ref_mask, test_mask


@st.composite
def problem_batches(draw):
    """References per problem and a rollout -> problem index."""
    cand = draw(ref.durations((B, T)))
    refs = draw(ref.durations((P, T, H)))
    ref_mask = draw(ref.masks((P, T, H)))
    refs = ref.fill_padding(refs, ref_mask, draw(ref.garbage((P, T, H))))
    test_mask = draw(ref.masks((B, T)))
    index = np.array(draw(st.lists(st.integers(0, P - 1), min_size=B, max_size=B)), np.int32)
    return cand, refs, ref_mask, index, test_mask


def expected(fn, cand, refs, ref_mask, *args):
    rows = [fn(cand[i], refs[i], ref_mask[i], *args) for i in range(len(cand))]
    return np.array([[ref.to_float(v) for v in row] for row in rows])


@TIES
@given(batches())
def test_per_test_percentile_matches_loop(ties, batch):
    cand, refs, ref_mask, _ = batch
    cand = np.where(np.isfinite(cand), cand, 1.0).astype(np.float32)  # every test scored here
    got = np.asarray(percentiles.per_test_percentile(cand, refs, ref_mask, ties=ties))
    want = expected(ref.per_test_percentile_row, cand, refs, ref_mask, ties)
    np.testing.assert_allclose(got, want, rtol=1e-6, equal_nan=True)


@TIES
@given(batches())
def test_qar_and_qp_match_loop(ties, batch):
    cand, refs, ref_mask, test_mask = batch
    got_qar = np.asarray(percentiles.qar(cand, refs, ref_mask, test_mask, ties=ties))
    got_qp = np.asarray(percentiles.qp(cand, refs, ref_mask, test_mask, ties=ties))
    got_cand, got_refs = map(
        np.asarray, percentiles.mean_percentiles(cand, refs, ref_mask, test_mask, ties=ties)
    )
    want_qar, want_qp, want_refs = [], [], []
    for i in range(B):
        a_y, a_h = ref.mean_percentiles_row(cand[i], refs[i], ref_mask[i], test_mask[i], ties)
        want_qar.append(ref.to_float(a_y))
        want_refs.append([ref.to_float(a) for a in a_h])
        want_qp.append(ref.to_float(ref.qp_row(cand[i], refs[i], ref_mask[i], test_mask[i], ties)))
    np.testing.assert_allclose(got_qar, want_qar, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got_cand, want_qar, rtol=1e-6, equal_nan=True)
    np.testing.assert_allclose(got_refs, want_refs, rtol=1e-6, equal_nan=True)
    np.testing.assert_array_equal(got_qp, np.array(want_qp, np.float32))


@TIES
@given(problem_batches())
def test_by_problem_equals_broadcast_form(ties, batch):
    cand, refs_p, mask_p, index, test_mask = batch
    refs_b, mask_b = refs_p[index], mask_p[index]
    pairs = [
        (
            percentiles.per_test_percentile_by_problem(cand, refs_p, mask_p, index, ties),
            percentiles.per_test_percentile(cand, refs_b, mask_b, ties),
        ),
        (
            percentiles.qar_by_problem(cand, refs_p, mask_p, index, test_mask, ties),
            percentiles.qar(cand, refs_b, mask_b, test_mask, ties),
        ),
        (
            percentiles.qp_by_problem(cand, refs_p, mask_p, index, test_mask, ties),
            percentiles.qp(cand, refs_b, mask_b, test_mask, ties),
        ),
    ]
    for fast, broadcast in pairs:
        np.testing.assert_array_equal(np.asarray(fast), np.asarray(broadcast))


@TIES
@given(problem_batches())
def test_precomputed_reference_ranks_change_nothing(ties, batch):
    cand, refs_p, mask_p, index, test_mask = batch
    ranks = percentiles.reference_ranks(refs_p, mask_p, ties)
    np.testing.assert_array_equal(
        np.asarray(percentiles.qp_by_problem(cand, refs_p, mask_p, index, test_mask, ties)),
        np.asarray(
            percentiles.qp_by_problem(
                cand, refs_p, mask_p, index, test_mask, ties, ref_rank_PTH=ranks
            )
        ),
    )


@TIES
@given(batches(), st.data())
def test_invariant_under_increasing_transform_per_test(ties, batch, data):
    """Any strictly increasing map of all durations of a test leaves every percentile as is."""
    cand, refs, ref_mask, test_mask = batch
    grid = np.array(ref.DURATION_GRID)
    new_cand, new_refs = cand.copy(), refs.copy()
    for t in range(T):
        steps = data.draw(
            st.lists(st.floats(0.01, 100.0), min_size=len(grid), max_size=len(grid))
        )
        image = np.cumsum(steps).astype(np.float32)
        assert np.all(np.diff(image) > 0)
        for k, value in enumerate(grid):
            new_cand[:, t][cand[:, t] == value] = image[k]
            new_refs[:, t][refs[:, t] == value] = image[k]
    for fn in (percentiles.qar, percentiles.qp):
        before = np.asarray(fn(cand, refs, ref_mask, test_mask, ties=ties))
        after = np.asarray(fn(new_cand, new_refs, ref_mask, test_mask, ties=ties))
        np.testing.assert_allclose(after, before, rtol=1e-6, equal_nan=True)


@TIES
@given(batches())
def test_qar_and_qp_lie_in_unit_interval(ties, batch):
    cand, refs, ref_mask, test_mask = batch
    for fn in (percentiles.qar, percentiles.qp):
        values = np.asarray(fn(cand, refs, ref_mask, test_mask, ties=ties))
        defined = values[~np.isnan(values)]
        assert np.all((defined >= 0) & (defined <= 1))


@TIES
@given(batches())
def test_candidate_faster_than_every_reference_scores_zero(ties, batch):
    _, refs, ref_mask, test_mask = batch
    cand = np.full((B, T), 0.01, np.float32)  # below every grid duration
    rankable = np.any(test_mask[..., None] & ref_mask, axis=(1, 2))
    for fn in (percentiles.qar, percentiles.qp):
        values = np.asarray(fn(cand, refs, ref_mask, test_mask, ties=ties))
        np.testing.assert_array_equal(values[rankable], 0.0)
        assert np.all(np.isnan(values[~rankable]))


@TIES
@given(batches(), st.data())
def test_padding_never_changes_a_result(ties, batch, data):
    cand, refs, ref_mask, test_mask = batch
    other_refs = ref.fill_padding(refs, ref_mask, data.draw(ref.garbage((B, T, H))))
    other_cand = ref.fill_padding(cand, test_mask, data.draw(ref.garbage((B, T))))
    for fn in (percentiles.qar, percentiles.qp):
        np.testing.assert_array_equal(
            np.asarray(fn(cand, refs, ref_mask, test_mask, ties=ties)),
            np.asarray(fn(other_cand, other_refs, ref_mask, test_mask, ties=ties)),
        )


def test_slowest_candidate_and_spec_example():
    # one test, references 1, 2, 3 s; candidate 2 s: min rule 1/3, average rule (2.5-1)/3 = 0.5
    refs = np.array([[[1.0, 2.0, 3.0]]], np.float32)
    mask = np.ones((1, 1, 3), bool)
    cand = np.array([[2.0]], np.float32)
    assert percentiles.per_test_percentile(cand, refs, mask, "min")[0, 0] == pytest.approx(1 / 3)
    assert percentiles.per_test_percentile(cand, refs, mask, "average")[0, 0] == pytest.approx(0.5)
    slow = np.array([[5.0]], np.float32)
    assert percentiles.qp(slow, refs, mask, np.ones((1, 1), bool))[0] == 1.0


def test_qp_leaderboard_by_hand():
    # two tests, three references; candidate (2, 2). Pools per test include the candidate.
    refs = np.array([[[1.0, 3.0, 4.0], [3.0, 1.0, 4.0]]], np.float32)
    mask = np.ones((1, 2, 3), bool)
    cand = np.array([[2.0, 2.0]], np.float32)
    a_y, a_h = percentiles.mean_percentiles(cand, refs, mask, np.ones((1, 2), bool))
    # candidate: 1/3 on both tests. refs: (0, 2/3), (2/3, 0), (1, 1) -> means 1/3, 1/3, 1
    np.testing.assert_allclose(np.asarray(a_y), [1 / 3], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(a_h), [[1 / 3, 1 / 3, 1.0]], rtol=1e-6)
    # ties on a(.) favour the candidate: nobody is strictly faster, q = 0 / (4 - 1)
    assert percentiles.qp(cand, refs, mask, np.ones((1, 2), bool))[0] == 0.0


def test_nan_candidate_duration_on_a_used_test_is_never_fastest():
    refs = np.ones((1, 2, 2), np.float32)
    mask = np.ones((1, 2, 2), bool)
    cand = np.array([[np.nan, 0.5]], np.float32)
    assert np.isnan(percentiles.qar(cand, refs, mask, np.ones((1, 2), bool))[0])
    assert np.isnan(percentiles.qp(cand, refs, mask, np.ones((1, 2), bool))[0])
    # the same NaN on a test that is not used is padding and does not matter
    used = np.array([[False, True]])
    assert percentiles.qp(cand, refs, mask, used)[0] == 0.0


def test_bad_inputs_raise_with_names():
    cand = np.ones((2, 3), np.float32)
    refs = np.ones((1, 3, 2), np.float32)
    mask = np.ones((1, 3, 2), bool)
    with pytest.raises(ValueError, match=r"problem_index\[1\] = 4"):
        percentiles.qp_by_problem(cand, refs, mask, np.array([0, 4]), np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="references have 3 tests"):
        percentiles.qar(np.ones((2, 4), np.float32), refs, mask, np.ones((2, 4), bool))
    with pytest.raises(ValueError, match="ties='mean'"):
        percentiles.qar(cand, np.ones((2, 3, 2)), np.ones((2, 3, 2), bool), cand > 0, "mean")
