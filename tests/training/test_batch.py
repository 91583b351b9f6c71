"""The batch builder: what it drops (undefined rollouts, groups without a baseline, stale and
zero-signal groups: each counted, its position returned), the advantages it keeps, and what a
step packs (whole groups, left-overs first next time, positions trained only when packed).
Expected counts come from a loop over the rules of docs/design/training.md §2, written
out here."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.rollouts.batch import has_signal
from jaxopt_rl.rollouts.testing import synthetic_rollouts
from jaxopt_rl.training.batch import BatchBuilder
from jaxopt_rl.training.config import GRPOConfig

REWARDS = st.sampled_from([0.0, 0.5, 1.0, float("nan")])


def _rollouts(rewards_PG, version=0, lengths=None, first_position=0):
    rewards_PG = np.asarray(rewards_PG, np.float32)
    count, size = rewards_PG.shape
    lengths = np.full((count, size), 3) if lengths is None else np.asarray(lengths)
    completions = [[np.arange(1, 1 + n, dtype=np.int32) * (g + 1) for g, n in enumerate(row)]
                   for row in lengths]
    return synthetic_rollouts([np.ones(2, np.int32)] * count, completions, rewards_PG,
                              version=version,
                              positions=range(first_position, first_position + count))


@given(st.lists(st.tuples(st.integers(0, 10), st.lists(REWARDS, min_size=2, max_size=2)),
                min_size=1, max_size=6),
       st.integers(0, 12), st.integers(0, 5), st.booleans(), st.integers(1, 6))
def test_offer_counts_every_drop_and_keeps_the_rest_in_order(groups, extra, s_max, river, size):
    builder = BatchBuilder(GRPOConfig(horizon=64, rows=4, max_staleness=s_max, river=river), 99)
    step = max(version for version, _ in groups) + extra
    want = {"undefined_rollouts": 0, "no_baseline": 0, "stale": 0, "zero_signal": 0}
    want_kept, want_dropped, got_dropped = [], [], []
    got = dict.fromkeys(want, 0)
    for position, (version, pair) in enumerate(groups):
        rewards = (pair * size)[:max(size, 2)]  # a group of max(size, 2) rollouts
        defined = [r for r in rewards if r == r]
        want["undefined_rollouts"] += len(rewards) - len(defined)
        if len(defined) < 2:
            want["no_baseline"] += 1
        elif step - version > s_max:
            want["stale"] += 1
        elif (all(r == 0 for r in defined) if river else len(set(defined)) == 1):
            want["zero_signal"] += 1
        else:
            want_kept.append((position, step - version))
            continue
        want_dropped.append(position)
    for position, (version, pair) in enumerate(groups):
        rewards = (pair * size)[:max(size, 2)]
        offered = builder.offer(_rollouts([rewards], version, first_position=position), step)
        for key in got:
            got[key] += getattr(offered, key)
        got_dropped += offered.dropped_positions
    assert got == want
    assert got_dropped == want_dropped
    assert [(t.position, step - groups[t.position][0]) for t in builder.pending] == want_kept
    for item in builder.pending:
        assert np.all(np.isfinite(item.adv_G))
        if not river:  # token-weighted baseline: sum_i L_i A_i = 0
            lengths = np.array([len(c) for c in item.completions])
            assert abs(float(np.sum(lengths * item.adv_G))) <= 1e-5 * lengths.sum()


def test_undefined_rollouts_leave_with_their_own_tokens():
    builder = BatchBuilder(GRPOConfig(horizon=64, rows=4), 1)
    rollouts = _rollouts([[1.0, np.nan, -1.0, np.inf]], version=1, lengths=[[2, 3, 4, 5]])
    offered = builder.offer(rollouts, step=1)
    assert offered.undefined_rollouts == 2 and offered.dropped_positions == []
    (kept,) = builder.pending
    assert [len(c) for c in kept.completions] == [2, 4]  # rollouts 0 and 2
    assert [len(lp) for lp in kept.sampler_logps] == [2, 4]
    # baseline (2 * 1 + 4 * -1) / 6 = -1/3
    np.testing.assert_allclose(kept.adv_G, [4 / 3, -2 / 3], rtol=1e-6)


def test_river_rewards_are_the_advantages():
    builder = BatchBuilder(GRPOConfig(horizon=64, rows=4, river=True), 1)
    builder.offer(_rollouts([[0.5, 0.25, 0.0]]), step=0)
    np.testing.assert_array_equal(builder.pending[0].adv_G, [0.5, 0.25, 0.0])


def test_a_group_from_the_future_is_an_error():
    builder = BatchBuilder(GRPOConfig(horizon=64, rows=4), 1)
    with pytest.raises(ValueError, match="newer than the trainer's step 3"):
        builder.offer(_rollouts([[0.0, 1.0]], version=5), step=3)


def test_take_packs_whole_groups_and_offers_the_rest_first_next_step():
    config = GRPOConfig(horizon=8, rows=4, microbatches=2, max_staleness=5)
    builder = BatchBuilder(config, prompts_per_step=3)
    # positions 0..4: stale, flat, a, b (one batch of version 9), c (version 10)
    assert builder.offer(_rollouts([[0, 1]], version=0, lengths=[[5, 5]]), 10).stale == 1
    offered = builder.offer(_rollouts([[1, 1], [0, 1], [1, 0]], version=9, lengths=[[5, 5]] * 3,
                                      first_position=1), 10)
    assert (offered.zero_signal, offered.staleness, offered.dropped_positions) == (1, [1, 1], [1])
    builder.offer(_rollouts([[0.5, 1]], version=10, lengths=[[5, 5]], first_position=4), 10)
    assert builder.need == 0
    taken = builder.take(10)  # 4 rows of 8 hold two groups of two trajectories of 7 tokens
    assert taken.batch.tokens.shape == (2, 2, 8)
    assert taken.trained_positions == [2, 3]
    assert (taken.trajectories, taken.tokens, taken.completion_tokens) == (4, 28, 20)
    assert [t.position for t in builder.pending] == [4] and builder.need == 2
    taken = builder.take(11)
    assert taken.trained_positions == [4] and not builder.pending


def test_a_group_that_waited_past_s_max_is_dropped_not_trained():
    """docs/design/training.md §2: no group is trained more than S_max steps after it was sampled,
    even one that did not fit its first step's rows."""
    builder = BatchBuilder(GRPOConfig(horizon=8, rows=2, max_staleness=1), prompts_per_step=2)
    builder.offer(_rollouts([[0, 1], [1, 0]], version=4, lengths=[[5, 5]] * 2), step=5)  # lag 1
    first = builder.take(5)  # two rows hold one group of two 7-token trajectories
    assert first.trained_positions == [0] and first.stale_positions == []
    second = builder.take(6)  # the other group would now be trained at lag 2 > S_max
    assert second.trained_positions == [] and second.stale_positions == [1]
    assert second.trajectories == 0 and not builder.pending


def test_has_signal():
    assert not has_signal(np.array([0.3, 0.3, 0.3]))
    assert has_signal(np.array([0.3, 0.3, 0.31]))
    assert not has_signal(np.array([1.0]))  # one rollout: its advantage is 0
    assert has_signal(np.array([0.0, 0.2]), river=True)
    assert not has_signal(np.array([0.0, 0.0]), river=True)
    assert has_signal(np.array([0.2, 0.2]), river=True)  # RiVER: equal but non-zero is signal
