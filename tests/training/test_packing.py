"""Packing and the group filters: no trajectory split, rows <= N, groups whole, nothing lost or
duplicated; staleness and zero-signal drops counted (property tests)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.training.packing import (
    Group,
    ScoredGroup,
    has_signal,
    pack,
    select_groups,
    split_microbatches,
)


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
        rewards = np.asarray(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=size,
                                           max_size=size)), np.float32)
        version = draw(st.integers(0, 10))
        out.append(Group(prompt, completions, logps, rewards, version, problem_id=f"p{index}"))
    return out


def scored(group_list):
    return [ScoredGroup(g, np.linspace(-1, 1, len(g.completions)).astype(np.float32))
            for g in group_list]


@given(groups(), st.integers(1, 5), st.integers(16, 40))
def test_pack_keeps_trajectories_whole_and_rows_within_horizon(group_list, rows, horizon):
    items = scored(group_list)
    try:
        result = pack(items, rows=rows, horizon=horizon)
    except ValueError as err:  # a group larger than the whole batch
        assert "cannot fit" in str(err)
        return
    batch = result.batch
    assert batch.tokens.shape == (rows, horizon)
    # Every packed group appears whole; every left-over group not at all; order is kept.
    packed_ids = [item.group.problem_id for item in result.packed]
    leftover_ids = [item.group.problem_id for item in result.leftover]
    assert sorted(packed_ids + leftover_ids) == sorted(g.problem_id for g in group_list)
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
    for item in result.packed:
        g = item.group
        for i, completion in enumerate(g.completions):
            n_p, n_c = len(g.prompt), len(completion)
            want.append((g.prompt.tolist() + completion.tolist(), [0.0] * n_p + [1.0] * n_c,
                         [0.0] * n_p + g.sampler_logps[i].tolist(),
                         [0.0] * n_p + [float(item.adv_G[i])] * n_c))
    assert sorted(found) == sorted(want)
    assert result.trajectories == len(want)
    assert result.tokens == int((batch.segment_ids > 0).sum())
    assert result.completion_tokens == int(batch.loss_mask.sum())


@given(groups(), st.integers(16, 40))
def test_every_group_fits_an_empty_batch_of_enough_rows(group_list, horizon):
    """Leftovers only happen when the batch is full: with one row per trajectory all pack."""
    items = scored(group_list)
    rows = sum(len(g.completions) for g in group_list)
    result = pack(items, rows=rows, horizon=horizon)
    assert not result.leftover


def test_group_that_does_not_fit_is_left_for_the_next_batch_whole():
    tokens = np.ones(7, np.int32)
    big = Group(np.ones(1, np.int32), [tokens, tokens], [np.zeros(7, np.float32)] * 2,
                np.array([0.0, 1.0], np.float32), 0, "big")
    small = Group(np.ones(1, np.int32), [tokens[:2]], [np.zeros(2, np.float32)],
                  np.array([1.0], np.float32), 0, "small")
    first = Group(np.ones(1, np.int32), [tokens], [np.zeros(7, np.float32)],
                  np.array([1.0], np.float32), 0, "first")
    result = pack(scored([first, big, small]), rows=2, horizon=8)
    assert [i.group.problem_id for i in result.packed] == ["first", "small"]
    assert [i.group.problem_id for i in result.leftover] == ["big"]


def test_too_long_trajectory_is_an_error_naming_it():
    g = Group(np.ones(3, np.int32), [np.ones(10, np.int32)], [np.zeros(10, np.float32)],
              np.array([1.0], np.float32), 0, "long")
    with pytest.raises(ValueError, match="'long' rollout 0: trajectory of 13 tokens"):
        pack(scored([g]), rows=4, horizon=8)


def test_group_validates_its_arrays():
    with pytest.raises(ValueError, match="3 tokens but 2 log-probs"):
        Group(np.ones(1, np.int32), [np.ones(3, np.int32)], [np.zeros(2)], np.ones(1), 0, "x")
    with pytest.raises(ValueError, match="empty prompt"):
        Group(np.ones(0, np.int32), [np.ones(3, np.int32)], [np.zeros(3)], np.ones(1), 0, "x")


@given(groups(), st.integers(0, 12), st.integers(0, 5), st.booleans())
def test_select_groups_counts_every_drop(group_list, extra_steps, max_staleness, river):
    step = max(g.version for g in group_list) + extra_steps
    selection = select_groups(group_list, step, max_staleness=max_staleness, river=river)
    assert selection.seen == len(group_list)
    stale = [g for g in group_list if step - g.version > max_staleness]
    assert selection.stale == len(stale)
    fresh = [g for g in group_list if step - g.version <= max_staleness]
    if river:
        silent = [g for g in fresh if np.all(g.rewards == 0)]
    else:
        silent = [g for g in fresh if len(set(g.rewards.tolist())) <= 1]
    assert selection.zero_signal == len(silent)
    assert all(step - s.group.version <= max_staleness for s in selection.kept)
    assert selection.staleness == [step - s.group.version for s in selection.kept]
    for item in selection.kept:
        if river:
            np.testing.assert_array_equal(item.adv_G, item.group.rewards)
        else:  # token-weighted baseline: sum_i L_i A_i = 0
            lengths = item.group.lengths_G
            if lengths.sum():
                assert abs(float(np.sum(lengths * item.adv_G))) <= 1e-4 * lengths.sum()


def test_group_from_the_future_is_an_error():
    g = Group(np.ones(1, np.int32), [np.ones(2, np.int32)], [np.zeros(2)], np.ones(1), 5, "x")
    with pytest.raises(ValueError, match="newer than the trainer's step 3"):
        select_groups([g], 3, max_staleness=30)


def test_has_signal():
    assert not has_signal(np.array([0.3, 0.3, 0.3]))
    assert has_signal(np.array([0.3, 0.3, 0.31]))
    assert not has_signal(np.array([1.0]))  # one rollout: its advantage is 0
    assert has_signal(np.array([0.0, 0.2]), river=True)
    assert not has_signal(np.array([0.0, 0.0]), river=True)
    assert has_signal(np.array([0.2, 0.2]), river=True)  # RiVER: equal but non-zero is signal


def test_split_microbatches():
    g = Group(np.ones(1, np.int32), [np.arange(1, 4, dtype=np.int32)] * 4,
              [np.zeros(3, np.float32)] * 4, np.arange(4, dtype=np.float32), 0, "x")
    batch = pack(scored([g]), rows=4, horizon=4).batch
    micro = split_microbatches(batch, 2)
    assert micro.tokens.shape == (2, 2, 4)
    np.testing.assert_array_equal(micro.tokens.reshape(4, 4), batch.tokens)
    with pytest.raises(ValueError, match="4 rows cannot be split into 3"):
        split_microbatches(batch, 3)


def test_build_batch_counts_and_leftovers():
    from jaxopt_rl.training.config import GRPOConfig
    from jaxopt_rl.training.packing import build_batch

    def group(name, version, rewards, length=5):
        tokens = np.ones(length, np.int32)
        return Group(np.ones(2, np.int32), [tokens] * len(rewards),
                     [np.zeros(length, np.float32)] * len(rewards),
                     np.asarray(rewards, np.float32), version, name)

    groups = [group("stale", 0, [0, 1]), group("flat", 9, [1, 1]), group("a", 8, [0, 1]),
              group("b", 9, [1, 0]), group("c", 10, [0.5, 1])]
    config = GRPOConfig(horizon=8, rows=4, microbatches=2, max_staleness=5)
    plan = build_batch(groups, 10, config)
    assert plan.batch.tokens.shape == (2, 2, 8)
    assert [g.problem_id for g in plan.leftover] == ["c"]  # 4 rows hold two groups of two
    s = plan.stats
    assert (s["groups/seen"], s["groups/stale"], s["groups/zero_signal"]) == (5, 1, 1)
    assert (s["groups/packed"], s["groups/leftover"], s["batch/trajectories"]) == (2, 1, 4)
    assert s["rate/stale"] == 0.2 and s["rate/zero_signal"] == 0.2
    assert s["staleness/mean"] == 1.5 and s["staleness/max"] == 2
    assert s["batch/fill"] == 28 / 32 and not plan.empty
    assert build_batch([groups[0]], 10, config).empty
