"""`RolloutBatch`: the one thing that crosses from the rollout worker to the trainer (and to
evaluation): the P prompts of one sampler call x their G rollouts each, scored.

It is the grouped layout the rewards already use: row p holds prompt p's G rollouts, so a
per-group quantity (advantage baseline, signal, feedback resolution) is a reduction over the
last axis. Tokens are ragged (a completion stops at its own EOS), so they are kept as tuples of
per-rollout arrays; everything else is a dense `[P, G]` or `[P]` array.

The columns the trainer filters on are derived here, once:

    defined_PG       a reward exists (NaN: the environment said undefined: inconclusive,
                     unrankable); undefined rollouts are dropped, never scored as 0
    staleness_P      optimizer steps between the weights that sampled the batch and `step`
    signal_P         the group's rewards can move the policy (`has_signal`)

Dimension letters (`jaxopt_rl.dimensions`): P prompts, G rollouts per prompt, O new tokens,
L prompt tokens.
"""

from __future__ import annotations

import dataclasses

import numpy as np

SIGNAL_NAMES = ("c_cor", "c_strict", "g", "q", "inconclusive", "undefined")
COUNT_NAMES = ("no_program", "tests", "infra_error", "timeout", "not_run", "fallback",
               "executed", "remote_only", "unrankable", "lost_tests")
SECONDS_NAMES = ("sample", "execute", "score")


def has_signal(rewards_G: np.ndarray, river: bool = False) -> bool:
    """False when a group's rewards carry no gradient: all equal (GRPO: every advantage is 0),
    or for RiVER (rewards are advantages, not centred) all zero."""
    rewards_G = np.asarray(rewards_G, np.float64)
    if river:
        return bool(np.any(rewards_G != 0.0))
    return bool(rewards_G.size > 1 and np.ptp(rewards_G) > 0.0)


@dataclasses.dataclass(frozen=True)
class RolloutBatch:
    """P prompts x G rollouts of one sampler call, executed and scored under one policy."""

    problem_ids: tuple[str, ...]  # [P]
    positions_P: np.ndarray  # int64: each prompt's index in the loader (resume)
    prompt_tokens: tuple[np.ndarray, ...]  # P x int32 [L]
    completion_tokens: tuple[tuple[np.ndarray, ...], ...]  # P x G x int32 [O]
    sampler_logprobs: tuple[tuple[np.ndarray, ...], ...]  # P x G x float32 [O], raw model
    finished_PG: np.ndarray  # bool: stopped on EOS (False: cut at max_new_tokens)
    rewards_PG: np.ndarray  # float32, NaN: undefined
    signals: dict[str, np.ndarray]  # SIGNAL_NAMES -> bool [P, G] (q: float)
    policy_version: int  # optimizer step of the weights that sampled every row
    counts: dict[str, int]  # COUNT_NAMES, summed over the batch
    seconds: dict[str, float]  # SECONDS_NAMES, this call's share of each phase

    def __post_init__(self) -> None:
        prompts, size = np.shape(self.rewards_PG)
        ragged = (len(self.problem_ids), len(self.positions_P), len(self.prompt_tokens),
                  len(self.completion_tokens), len(self.sampler_logprobs))
        if any(n != prompts for n in ragged):
            raise ValueError(f"rollout batch of {prompts} prompts: ids, positions, prompts, "
                             f"completions and log-probs have {ragged} rows")
        for p, (tokens_G, logps_G) in enumerate(zip(self.completion_tokens,
                                                     self.sampler_logprobs)):
            if len(tokens_G) != size or len(logps_G) != size:
                raise ValueError(f"prompt {self.problem_ids[p]!r}: {len(tokens_G)} completions "
                                 f"and {len(logps_G)} log-prob arrays for a group of {size}")
            for g, (tokens, logps) in enumerate(zip(tokens_G, logps_G)):
                if len(tokens) != len(logps):
                    raise ValueError(f"prompt {self.problem_ids[p]!r} rollout {g}: "
                                     f"{len(tokens)} tokens but {len(logps)} log-probs")

    @property
    def prompts(self) -> int:
        return len(self.problem_ids)

    @property
    def group_size(self) -> int:
        return int(np.shape(self.rewards_PG)[1])

    @property
    def lengths_PG(self) -> np.ndarray:
        return np.array([[len(t) for t in tokens_G] for tokens_G in self.completion_tokens],
                        np.int32).reshape(self.prompts, self.group_size)

    @property
    def defined_PG(self) -> np.ndarray:
        return np.isfinite(self.rewards_PG)

    def staleness_P(self, step: int) -> np.ndarray:
        """Optimizer steps the trainer at `step` is ahead of the sampling weights (one value per
        prompt: a batch is sampled by one policy, but groups are filtered one by one)."""
        return np.full(self.prompts, step - self.policy_version, np.int64)

    def signal_P(self, river: bool = False) -> np.ndarray:
        """`has_signal` of each group's defined rewards."""
        return np.array([has_signal(r[np.isfinite(r)], river) for r in self.rewards_PG], bool)

    def rollout_records(self, tokenizer) -> list[dict]:
        """One JSON-ready record per rollout, its completion decoded (`loop.log_rollouts`); an
        undefined reward is null."""
        texts = tokenizer.decode_batch([t for tokens_G in self.completion_tokens for t in tokens_G])
        return [{"problem_id": self.problem_ids[p], "position": int(self.positions_P[p]),
                 "rollout": g, "policy_version": int(self.policy_version),
                 "reward": float(r) if np.isfinite(r := self.rewards_PG[p, g]) else None,
                 "text": texts[p * self.group_size + g]}
                for p in range(self.prompts) for g in range(self.group_size)]
