"""Test double: a `RolloutBatch` built from token and reward arrays, without a model or a
sandbox (tests and benchmarks of the trainer's host side use it)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxopt_rl.rollouts.batch import COUNT_NAMES, SIGNAL_NAMES, RolloutBatch


def synthetic_rollouts(prompts: Sequence[np.ndarray],
                       completions: Sequence[Sequence[np.ndarray]],
                       rewards_PG: np.ndarray, *, version: int = 0,
                       logprobs: Sequence[Sequence[np.ndarray]] | None = None,
                       positions: Sequence[int] | None = None,
                       problem_ids: Sequence[str] | None = None) -> RolloutBatch:
    """P prompts with G completions each; log-probs default to zeros, positions to 0..P-1,
    signals to "correct where the reward is positive"."""
    rewards_PG = np.asarray(rewards_PG, np.float32)
    count, size = rewards_PG.shape
    if logprobs is None:
        logprobs = [[np.zeros(len(c), np.float32) for c in row] for row in completions]
    correct_PG = np.nan_to_num(rewards_PG) > 0
    signals = dict.fromkeys(SIGNAL_NAMES, np.zeros((count, size), bool))
    signals.update(c_cor=correct_PG, c_strict=correct_PG, g=correct_PG,
                   undefined=~np.isfinite(rewards_PG))
    return RolloutBatch(
        problem_ids=tuple(problem_ids or [f"p{p}" for p in range(count)]),
        positions_P=np.asarray(positions if positions is not None else range(count), np.int64),
        prompt_tokens=tuple(np.asarray(p, np.int32) for p in prompts),
        completion_tokens=tuple(tuple(np.asarray(c, np.int32) for c in row)
                                for row in completions),
        sampler_logprobs=tuple(tuple(np.asarray(x, np.float32) for x in row)
                               for row in logprobs),
        finished_PG=np.ones((count, size), bool), rewards_PG=rewards_PG, signals=signals,
        policy_version=version, counts=dict.fromkeys(COUNT_NAMES, 0),
        seconds={"sample": 0.0, "execute": 0.0, "score": 0.0})
