"""The loop's first select step: a rollout whose reward is undefined (NaN: inconclusive,
untimed, unrankable) never reaches the loss, and a group left without a baseline trains nothing."""

from __future__ import annotations

import numpy as np

from jaxopt_rl.rollouts.worker import Group
from jaxopt_rl.training.loop import without_undefined


def _group(rewards):
    g = len(rewards)
    return Group(problem_id="p", position=3, prompt_tokens=np.arange(4, dtype=np.int32),
                 completion_tokens=tuple(np.full(2 + i, i, np.int32) for i in range(g)),
                 sampler_logprobs=tuple(np.full(2 + i, -0.1, np.float32) for i in range(g)),
                 finished_G=np.ones(g, bool), rewards_G=np.asarray(rewards, np.float32),
                 signals={}, policy_version=1, counts={}, seconds={})


def test_nan_rollouts_are_dropped_with_their_tokens_and_counted():
    trainable, dropped = without_undefined(_group([1.0, np.nan, -1.0, np.nan]))
    assert dropped == 2
    np.testing.assert_array_equal(trainable.rewards, [1.0, -1.0])
    # the kept rollouts keep their own tokens and log-probs (rollouts 0 and 2)
    assert [len(c) for c in trainable.completions] == [2, 4]
    assert [len(lp) for lp in trainable.sampler_logps] == [2, 4]
    assert trainable.version == 1


def test_a_group_without_two_defined_rewards_trains_nothing():
    assert without_undefined(_group([np.nan, np.nan, np.nan])) == (None, 3)
    assert without_undefined(_group([1.0, np.nan])) == (None, 1)  # one reward: no baseline


def test_infinite_rewards_count_as_undefined_too():
    trainable, dropped = without_undefined(_group([np.inf, 0.5, -0.5]))
    assert dropped == 1 and np.all(np.isfinite(trainable.rewards))
