"""Prepared references: reference ranks against a loop over pairs, the pool's derived arrays,
cutting a pool to some problems, and the exact division the kernels use."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.rewards import pool, reductions
from tests.rewards import reference_impl as ref

P, T, H = 3, 4, 5
TIES = pytest.mark.parametrize("ties", ["min", "average"])


@st.composite
def references(draw):
    refs = draw(ref.durations((P, T, H)))
    mask = draw(ref.masks((P, T, H)))
    return ref.fill_padding(refs, mask, draw(ref.garbage((P, T, H)))), mask


@TIES
@given(references())
def test_reference_ranks_match_a_loop_over_pairs(ties, refs_and_mask):
    refs, mask = refs_and_mask
    got = np.asarray(pool.reference_ranks(refs, mask, ties))
    for p in range(P):
        for t in range(T):
            usable = [h for h in range(H) if mask[p, t, h]]
            for h in range(H):
                if h not in usable:
                    assert got[p, t, h] == 0
                    continue
                others = [refs[p, t, j] for j in usable if j != h]
                want = sum(d < refs[p, t, h] for d in others)
                if ties == "average":
                    want += 0.5 * sum(d == refs[p, t, h] for d in others)
                assert got[p, t, h] == want, (p, t, h)


@TIES
@given(references())
def test_pool_arrays(ties, refs_and_mask):
    refs, mask = refs_and_mask
    built = pool.reference_pool(refs, mask, ties)
    key = np.asarray(built.key_PTH)
    np.testing.assert_array_equal(np.isnan(key), ~mask)
    np.testing.assert_array_equal(key[mask], refs[mask])
    np.testing.assert_array_equal(np.asarray(built.key_HTP), np.transpose(key, (2, 1, 0)))
    n = mask.sum(-1)
    np.testing.assert_array_equal(np.asarray(built.inv_n_PT),
                                  np.where(n > 0, 1 / np.maximum(n, 1).astype(np.float32), 0))
    np.testing.assert_array_equal(np.asarray(built.rank_PTH),
                                  np.asarray(pool.reference_ranks(refs, mask, ties)))
    assert pool.reference_pool(refs, mask, ties, ranks=False).rank_PTH is None


def test_take_and_lazy_ranks_equal_a_fresh_pool():
    rng = np.random.default_rng(0)
    refs = rng.choice(ref.DURATION_GRID, (5, T, H)).astype(np.float32)
    mask = rng.uniform(size=refs.shape) > 0.3
    rows = np.array([3, 0, 3])
    for ties in ("min", "average"):
        whole = pool.reference_pool(refs, mask, ties)
        fresh = pool.reference_pool(refs[rows], mask[rows], ties)
        lazy = pool.reference_pool(refs, mask, ties, ranks=False).with_ranks()
        for got in (whole.take(rows), lazy.take(rows)):
            for name in ("key_PTH", "key_HTP", "inv_n_PT", "rank_PTH"):
                np.testing.assert_array_equal(np.asarray(getattr(got, name)),
                                              np.asarray(getattr(fresh, name)), err_msg=name)


@given(hnp.arrays(np.float32, (6, 5), elements=st.integers(0, 40).map(float)),
       hnp.arrays(np.float32, (6, 1), elements=st.integers(1, 40).map(float)))
def test_exact_divide_is_the_correctly_rounded_quotient(numerator, denominator):
    got = np.asarray(reductions.exact_divide(jnp.asarray(numerator), denominator))
    np.testing.assert_array_equal(got, (numerator.astype(np.float64) / denominator)
                                  .astype(np.float32))


def test_bad_references_are_named():
    with pytest.raises(ValueError, match=r"\[P, T, H\]"):
        pool.reference_pool(np.ones((2, 3)), np.ones((2, 3), bool))
    with pytest.raises(ValueError, match="ref_mask shape"):
        pool.reference_ranks(np.ones((1, 2, 3)), np.ones((1, 2, 2), bool))
    with pytest.raises(ValueError, match="ties='mean'"):
        pool.reference_pool(np.ones((1, 2, 3)), np.ones((1, 2, 3), bool), "mean")
