"""Per-test percentiles, QAR and QP against the slow loops of `reference_impl`, plus the design's
properties: monotone invariance, range, saturation at 0, padding never matters, and the three
layouts (grouped `[P, G, T]`, rollouts pointing at problems, references per rollout) giving
identical numbers."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.rewards import percentiles
from tests.rewards import jaxprs
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


@st.composite
def grouped_batches(draw, p=P, g=3):
    """Grouped candidates `[P, G, T]` with garbage in padded tests and whole padded rollouts,
    references per problem, and a test mask per rollout or shared by the group."""
    cand = draw(ref.durations((p, g, T)))
    refs = draw(ref.durations((p, T, H)))
    ref_mask = draw(ref.masks((p, T, H)))
    refs = ref.fill_padding(refs, ref_mask, draw(ref.garbage((p, T, H))))
    shared = draw(st.booleans())
    test_mask = draw(ref.masks((p, 1, T))) if shared else draw(ref.masks((p, g, T)))
    real = draw(ref.masks((p, g, 1)))  # a padded rollout: every test masked, anything inside
    full_mask = np.broadcast_to(test_mask, (p, g, T)) & real
    cand = ref.fill_padding(cand, full_mask, draw(ref.garbage((p, g, T))))
    return cand, refs, ref_mask, (test_mask & real if not shared else test_mask), real


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
@given(grouped_batches())
def test_grouped_equals_by_problem_equals_per_rollout_references(ties, batch):
    cand, refs, ref_mask, test_mask, _ = batch
    p, g, t = cand.shape
    index = np.repeat(np.arange(p, dtype=np.int32), g)
    cand_bt, mask_bt = cand.reshape(p * g, t), np.broadcast_to(test_mask, cand.shape).reshape(-1, t)
    pool = percentiles.reference_pool(refs, ref_mask, ties)
    for grouped, by_problem, per_rollout in (
        (
            percentiles.per_test_percentile_grouped(cand, pool),
            percentiles.per_test_percentile_by_problem(cand_bt, refs, ref_mask, index, ties),
            percentiles.per_test_percentile(cand_bt, refs[index], ref_mask[index], ties),
        ),
        (
            percentiles.qar_grouped(cand, pool, test_mask),
            percentiles.qar_by_problem(cand_bt, refs, ref_mask, index, mask_bt, ties),
            percentiles.qar(cand_bt, refs[index], ref_mask[index], mask_bt, ties),
        ),
        (
            percentiles.qp_grouped(cand, pool, test_mask),
            percentiles.qp_by_problem(cand_bt, refs, ref_mask, index, mask_bt, ties),
            percentiles.qp(cand_bt, refs[index], ref_mask[index], mask_bt, ties),
        ),
    ):
        grouped = np.asarray(grouped).reshape(np.shape(by_problem))
        np.testing.assert_array_equal(grouped, np.asarray(by_problem))
        np.testing.assert_array_equal(grouped, np.asarray(per_rollout))


@TIES
@given(grouped_batches())
def test_grouped_qp_matches_loop_and_padded_rollouts_are_undefined(ties, batch):
    cand, refs, ref_mask, test_mask, real = batch
    pool = percentiles.reference_pool(refs, ref_mask, ties)
    got_qp = np.asarray(percentiles.qp_grouped(cand, pool, test_mask))
    got_qar = np.asarray(percentiles.qar_grouped(cand, pool, test_mask))
    mask = np.broadcast_to(test_mask, cand.shape)
    for p in range(cand.shape[0]):
        for g in range(cand.shape[1]):
            args = (cand[p, g], refs[p], ref_mask[p], mask[p, g], ties)
            want_qp = np.float32(ref.to_float(ref.qp_row(*args)))
            want_qar = ref.to_float(ref.mean_percentiles_row(*args)[0])
            np.testing.assert_array_equal(got_qp[p, g], want_qp)
            np.testing.assert_allclose(got_qar[p, g], want_qar, rtol=1e-6, equal_nan=True)
            if not real[p, g, 0] and test_mask.shape[1] > 1:  # no used test at all
                assert np.isnan(got_qp[p, g]) and np.isnan(got_qar[p, g])


@TIES
@given(grouped_batches(), st.data())
def test_a_group_never_sees_another_groups_rollouts(ties, batch, data):
    """Changing every rollout of problem 0 leaves the other problems' numbers as they were."""
    cand, refs, ref_mask, test_mask, _ = batch
    pool = percentiles.reference_pool(refs, ref_mask, ties)
    other = cand.copy()
    other[0] = data.draw(ref.durations(cand[0].shape))
    before = np.asarray(percentiles.qp_grouped(cand, pool, test_mask))
    after = np.asarray(percentiles.qp_grouped(other, pool, test_mask))
    np.testing.assert_array_equal(before[1:], after[1:])


def test_grouped_kernels_gather_nothing_and_build_nothing_four_dimensional():
    """The grouped path broadcasts a problem's references over its rollouts: no gather (the
    cost of the per-rollout layout) and no `[P, G, T, H]` intermediate."""
    refs, mask = np.ones((P, T, H), np.float32), np.ones((P, T, H), bool)
    cand, test_mask = np.ones((P, 4, T), np.float32), np.ones((P, 1, T), bool)
    pool = percentiles.reference_pool(refs, mask)

    def qp_and_qar(cand, pool, test_mask):
        return (percentiles.qp_grouped(cand, pool, test_mask),
                percentiles.qar_grouped(cand, pool, test_mask))

    assert "gather" not in jaxprs.primitives(qp_and_qar, cand, pool, test_mask)
    assert jaxprs.max_rank(qp_and_qar, cand, pool, test_mask) == 3
    prepare = lambda r, m: percentiles.reference_pool(r, m)  # noqa: E731
    assert "gather" not in jaxprs.primitives(prepare, refs, mask)
    assert jaxprs.max_rank(prepare, refs, mask) == 3


def test_qp_on_a_pool_without_ranks_is_refused():
    pool = percentiles.reference_pool(np.ones((1, 2, 2)), np.ones((1, 2, 2), bool), ranks=False)
    with pytest.raises(ValueError, match="ranks=False"):
        percentiles.qp_grouped(np.ones((1, 3, 2)), pool, np.ones((1, 1, 2), bool))
    with pytest.raises(ValueError, match=r"test_mask shape \(1, 2, 2\)"):
        percentiles.qar_grouped(np.ones((1, 3, 2)), pool, np.ones((1, 2, 2), bool))
    with pytest.raises(ValueError, match="candidates cover 2 problems"):
        percentiles.qar_grouped(np.ones((2, 3, 2)), pool, np.ones((2, 1, 2), bool))


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


# ---- paths a mutation run found untested ------------------------------------------------------

ONE_TEST_REFS = np.array([[[1.0, 2.0, 3.0]]], np.float32)  # one problem, one test, H = 3


@TIES
def test_a_reference_tied_with_the_candidate_is_not_faster_even_at_zero_tolerance(ties):
    """docs/design/rewards.md §4: b(y) counts references strictly faster than the candidate.
    Candidate 2 s among references 1, 2, 3 s: the 2 s reference ties it exactly (same score), so
    only the 1 s one counts: q = 1 / 3, with the default tolerance and with none."""
    mask, used = np.ones((1, 1, 3), bool), np.ones((1, 1), bool)
    cand = np.array([[2.0]], np.float32)
    for tolerance in (percentiles.DEFAULT_TIE_TOLERANCE, 0.0):
        assert percentiles.qp(cand, ONE_TEST_REFS, mask, used, ties,
                              tie_tolerance=tolerance)[0] == pytest.approx(1 / 3)
        pool = percentiles.reference_pool(ONE_TEST_REFS, mask, ties=ties)
        grouped = percentiles.qp_grouped(cand[:, None, :], pool, used[:, None, :], tolerance)
        assert grouped[0, 0] == pytest.approx(1 / 3)


def test_grouped_mean_percentiles_return_the_reference_scores():
    # the by-hand leaderboard of test_qp_leaderboard_by_hand, as one group of one rollout
    refs = np.array([[[1.0, 3.0, 4.0], [3.0, 1.0, 4.0]]], np.float32)
    pool = percentiles.reference_pool(refs, np.ones((1, 2, 3), bool))
    a_y, a_h = percentiles.mean_percentiles_grouped(
        np.array([[[2.0, 2.0]]], np.float32), pool, np.ones((1, 1, 2), bool))
    np.testing.assert_allclose(np.asarray(a_y), [[1 / 3]], rtol=1e-6)
    np.testing.assert_allclose(np.asarray(a_h), [[[1 / 3, 1 / 3, 1.0]]], rtol=1e-6)


def test_qar_needs_no_reference_ranks():
    """QAR reads only the candidate's percentiles: a pool prepared without ranks serves it."""
    mask = np.ones((1, 1, 3), bool)
    pool = percentiles.reference_pool(ONE_TEST_REFS, mask, ranks=False)
    cand = np.array([[[2.0], [0.5]]], np.float32)  # one group: a 2 s and a 0.5 s rollout
    np.testing.assert_allclose(
        np.asarray(percentiles.qar_grouped(cand, pool, np.ones((1, 1, 1), bool))),
        [[1 / 3, 0.0]], rtol=1e-6)


@pytest.mark.parametrize(("index", "bad"), [([0, 1], "problem_index[1] = 1"),
                                            ([0, -1], "problem_index[1] = -1"),
                                            ([2, 0], "problem_index[0] = 2")])
def test_a_problem_index_outside_the_references_is_named(index, bad):
    cand, used = np.ones((2, 1), np.float32), np.ones((2, 1), bool)
    refs, mask = np.ones((1, 1, 3), np.float32), np.ones((1, 1, 3), bool)
    for kernel in (percentiles.qp_by_problem, percentiles.qar_by_problem):
        with pytest.raises(ValueError, match=re.escape(bad) + r" outside \[0, 1\)"):
            kernel(cand, refs, mask, np.array(index), used)


def _count_takes(monkeypatch):
    from jaxopt_rl.rewards.pool import ReferencePool

    calls, take = [], ReferencePool.take
    monkeypatch.setattr(ReferencePool, "take", lambda self, rows: calls.append(1) or take(self, rows))
    return calls


@pytest.mark.parametrize(("num_problems", "group"), [(1, 3), (2, 2), (3, 1)])
def test_a_grouped_index_is_reshaped_and_any_other_gathers(monkeypatch, num_problems, group):
    """`repeat(arange(P), G)` broadcasts each problem's references over its rollouts (no
    gather); any other index gathers a pool per rollout. Both give the same numbers."""
    rng = np.random.default_rng(num_problems)
    refs = rng.uniform(0.1, 2.0, (num_problems, 2, 3)).astype(np.float32)
    mask = np.ones(refs.shape, bool)
    b = num_problems * group
    cand = rng.uniform(0.1, 2.0, (b, 2)).astype(np.float32)
    used = np.ones((b, 2), bool)
    takes = _count_takes(monkeypatch)
    grouped_index = np.repeat(np.arange(num_problems), group)
    grouped = np.asarray(percentiles.qp_by_problem(cand, refs, mask, grouped_index, used))
    assert takes == []
    order = np.argsort(-grouped_index, kind="stable")  # the same rollouts, problems reversed
    gathered = np.asarray(percentiles.qp_by_problem(cand[order], refs, mask,
                                                    grouped_index[order], used))
    assert len(takes) == (num_problems > 1)
    np.testing.assert_allclose(gathered, grouped[order], rtol=1e-6)


def test_a_traced_problem_index_gathers_and_equals_the_eager_result():
    rng = np.random.default_rng(7)
    refs = rng.uniform(0.1, 2.0, (2, 2, 3)).astype(np.float32)
    mask = np.ones(refs.shape, bool)
    cand, used = rng.uniform(0.1, 2.0, (4, 2)).astype(np.float32), np.ones((4, 2), bool)
    index = np.array([0, 0, 1, 1], np.int32)
    jitted = jax.jit(lambda c, i: percentiles.qp_by_problem(c, refs, mask, i, used))
    np.testing.assert_allclose(np.asarray(jitted(cand, index)),
                               np.asarray(percentiles.qp_by_problem(cand, refs, mask, index,
                                                                    used)), rtol=1e-6)


def test_an_empty_batch_over_no_problems_is_empty():
    empty = (np.zeros((0, 2), np.float32), np.zeros((0, 2, 3), np.float32),
             np.zeros((0, 2, 3), bool), np.zeros(0, np.int32), np.zeros((0, 2), bool))
    assert np.shape(percentiles.qp_by_problem(*empty)) == (0,)
    assert np.shape(percentiles.qar_by_problem(*empty)) == (0,)
