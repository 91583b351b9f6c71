"""Packing: no trajectory split, rows <= N, groups whole, nothing lost or duplicated, left-overs
in order (property tests); the microbatch split. The group filters are tested with the batch
builder (`test_batch.py`)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.training.packing import Trajectories, pack, split_microbatches


@st.composite
def groups(draw, max_groups=6, max_len=12):
    out = []
    for index in range(draw(st.integers(1, max_groups))):
        size = draw(st.integers(1, 4))
        prompt = np.asarray(
            draw(st.lists(st.integers(1, 99), min_size=1, max_size=4)), np.int32
        )
        completions = [
            np.asarray(draw(st.lists(st.integers(1, 99), min_size=0, max_size=max_len)), np.int32)
            for _ in range(size)
        ]
        logps = [-np.arange(1, len(c) + 1, dtype=np.float32) / 100 for c in completions]
        out.append(Trajectories(prompt, completions, logps,
                                np.linspace(-1, 1, size).astype(np.float32), label=f"p{index}"))
    return out


def _group(prompt_len, completions, label):
    return Trajectories(np.ones(prompt_len, np.int32), completions,
                        [np.zeros(len(c), np.float32) for c in completions],
                        np.linspace(0, 1, len(completions)).astype(np.float32), label=label)


@given(groups(), st.integers(1, 5), st.integers(16, 40))
def test_pack_keeps_trajectories_whole_and_rows_within_horizon(group_list, rows, horizon):
    items = group_list
    try:
        result = pack(items, rows=rows, horizon=horizon)
    except ValueError as err:  # a group larger than the whole batch
        assert "cannot fit" in str(err)
        return
    batch = result.batch
    assert batch.tokens.shape == (rows, horizon)
    # Every packed group appears whole; every left-over group not at all; order is kept.
    packed_ids = [g.label for g in result.packed]
    leftover_ids = [g.label for g in result.leftover]
    assert sorted(packed_ids + leftover_ids) == sorted(g.label for g in group_list)
    found = []  # (tokens, mask, logp, adv) of each segment
    for r in range(rows):
        seg = batch.segment_ids[r]
        real = seg > 0
        assert np.all(seg[real.sum():] == 0), "padding only at the end of a row"
        assert real.sum() <= horizon
        for s in np.unique(seg[real]):
            where = np.flatnonzero(seg == s)
            assert np.all(np.diff(where) == 1), "a trajectory is contiguous in its row"
            np.testing.assert_array_equal(batch.positions[r, where], np.arange(len(where)))
            found.append((batch.tokens[r, where].tolist(), batch.loss_mask[r, where].tolist(),
                          batch.old_logp[r, where].tolist(), batch.adv[r, where].tolist()))
    want = []
    for g in result.packed:
        for i, completion in enumerate(g.completions):
            n_p, n_c = len(g.prompt), len(completion)
            want.append((g.prompt.tolist() + completion.tolist(), [0.0] * n_p + [1.0] * n_c,
                         [0.0] * n_p + g.sampler_logps[i].tolist(),
                         [0.0] * n_p + [float(g.adv_G[i])] * n_c))
    assert sorted(found) == sorted(want)
    assert result.trajectories == len(want)
    assert result.tokens == int((batch.segment_ids > 0).sum())
    assert result.completion_tokens == int(batch.loss_mask.sum())


@given(groups(), st.integers(16, 40))
def test_every_group_fits_an_empty_batch_of_enough_rows(group_list, horizon):
    """Leftovers only happen when the batch is full: with one row per trajectory all pack."""
    items = group_list
    rows = sum(len(g.completions) for g in group_list)
    result = pack(items, rows=rows, horizon=horizon)
    assert not result.leftover


def test_group_that_does_not_fit_is_left_for_the_next_batch_whole():
    tokens = np.ones(7, np.int32)
    big = _group(1, [tokens, tokens], "big")
    small = _group(1, [tokens[:2]], "small")
    first = _group(1, [tokens], "first")
    result = pack([first, big, small], rows=2, horizon=8)
    assert [g.label for g in result.packed] == ["first", "small"]
    assert [g.label for g in result.leftover] == ["big"]


def test_too_long_trajectory_is_an_error_naming_it():
    g = _group(3, [np.ones(10, np.int32)], "long")
    with pytest.raises(ValueError, match="'long' rollout 0: trajectory of 13 tokens"):
        pack([g], rows=4, horizon=8)


def test_trajectories_validate_their_arrays():
    with pytest.raises(ValueError, match="3 tokens but 2 log-probs"):
        Trajectories(np.ones(1, np.int32), [np.ones(3, np.int32)], [np.zeros(2)], np.ones(1))
    with pytest.raises(ValueError, match="empty prompt"):
        Trajectories(np.ones(0, np.int32), [np.ones(3, np.int32)], [np.zeros(3)], np.ones(1))
    with pytest.raises(ValueError, match="advantages of shape"):
        Trajectories(np.ones(1, np.int32), [np.ones(3, np.int32)], [np.zeros(3)], np.ones(2))


def test_split_microbatches():
    g = _group(1, [np.arange(1, 4, dtype=np.int32)] * 4, "x")
    batch = pack([g], rows=4, horizon=4).batch
    micro = split_microbatches(batch, 2)
    assert micro.tokens.shape == (2, 2, 4)
    np.testing.assert_array_equal(micro.tokens.reshape(4, 4), batch.tokens)
    with pytest.raises(ValueError, match="4 rows cannot be split into 3"):
        split_microbatches(batch, 3)
