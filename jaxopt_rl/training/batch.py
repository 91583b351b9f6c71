"""The one GRPO batch builder: rollout batches in, one train step's `[U, R, L]` batch out
(docs/design/training.md §1-2). The loop and the tests call the same two methods.

`offer(rollouts, step)`, for each group (row) of a `RolloutBatch`, in order, reading the batch's
columns (`defined_PG`, `staleness_P`, `signal_P`):

    drop undefined     rollouts whose reward is undefined (NaN) leave the group (counted);
                       a group left with fewer than two has no baseline and is dropped
    drop stale         a group sampled more than `S_max` optimizer steps before `step`
    drop zero-signal   a group whose rewards cannot move the policy (`RolloutBatch.signal_P`)
    advantages         `grpo.advantages` (NumPy, on the host; RiVER rewards are used as is)

Every dropped group is used by no step: its loader position is returned so the loop marks it
consumed. The survivors wait in `pending`, in arrival order.

`take(step)` first drops the pending groups that have grown stale while they waited (a group
that did not fit the previous step's rows is older now: it is never trained more than `S_max`
steps after it was sampled), then packs the first `prompts_per_step` pending groups into
`grpo.rows` rows of `grpo.horizon` tokens (`packing.pack`), puts the groups that did not fit
back at the front, and splits the rows into `grpo.microbatches` microbatches. A group's position
is returned as trained only when it was packed, so a resume redoes the rest. No replay buffer: a
group is trained by one step or dropped.

The lag the metrics log (`Offered.staleness`) is measured when a group is offered.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxopt_rl.rollouts.batch import RolloutBatch
from jaxopt_rl.training.config import GRPOConfig
from jaxopt_rl.training.grpo import advantages
from jaxopt_rl.training.packing import PackedBatch, Trajectories, pack, split_microbatches


@dataclasses.dataclass
class Offered:
    """What `offer` did with one rollout batch: the counts the metrics log, the lags of the kept
    groups and the positions no step will train."""

    groups: int = 0
    undefined_rollouts: int = 0
    no_baseline: int = 0
    stale: int = 0
    zero_signal: int = 0
    staleness: list[int] = dataclasses.field(default_factory=list)
    dropped_positions: list[int] = dataclasses.field(default_factory=list)


@dataclasses.dataclass(frozen=True)
class StepBatch:
    """One step's input and what it holds."""

    batch: PackedBatch  # [U, R / U, L]
    trained_positions: list[int]
    trained_versions: list[int]  # the policy version that sampled each trained group
    stale_positions: list[int]  # pending groups that grew stale while they waited
    trajectories: int
    tokens: int  # real tokens (prompt + completion)
    completion_tokens: int


class BatchBuilder:
    """Selects groups as they arrive and packs them a step at a time (module docstring)."""

    def __init__(self, grpo: GRPOConfig, prompts_per_step: int):
        self.grpo = grpo
        self.prompts_per_step = prompts_per_step
        self.pending: list[Trajectories] = []

    @property
    def need(self) -> int:
        """Groups still missing before a full step."""
        return max(0, self.prompts_per_step - len(self.pending))

    def offer(self, rollouts: RolloutBatch, step: int) -> Offered:
        grpo = self.grpo
        out = Offered(groups=rollouts.prompts)
        lengths_PG, defined_PG = rollouts.lengths_PG, rollouts.defined_PG
        signal_P = rollouts.signal_P(grpo.river)
        for p, lag in enumerate(rollouts.staleness_P(step)):
            position = int(rollouts.positions_P[p])
            if lag < 0:
                raise ValueError(f"group {rollouts.problem_ids[p]!r} was sampled by policy "
                                 f"version {rollouts.policy_version}, newer than the trainer's "
                                 f"step {step}")
            keep_G = np.flatnonzero(defined_PG[p])
            out.undefined_rollouts += rollouts.group_size - len(keep_G)
            rewards_G = rollouts.rewards_PG[p, keep_G]
            if len(keep_G) < 2:
                out.no_baseline += 1
            elif lag > grpo.max_staleness:
                out.stale += 1
            elif not signal_P[p]:
                out.zero_signal += 1
            else:
                self.pending.append(Trajectories(
                    prompt=rollouts.prompt_tokens[p],
                    completions=[rollouts.completion_tokens[p][g] for g in keep_G],
                    sampler_logps=[rollouts.sampler_logprobs[p][g] for g in keep_G],
                    adv_G=advantages(rewards_G, lengths_PG[p, keep_G], river=grpo.river),
                    label=rollouts.problem_ids[p], position=position,
                    version=rollouts.policy_version))
                out.staleness.append(int(lag))
                continue
            out.dropped_positions.append(position)
        return out

    def take(self, step: int) -> StepBatch:
        """Pack the next step's groups (see the module docstring); the rest stay pending."""
        grpo = self.grpo
        stale = [g.position for g in self.pending if step - g.version > grpo.max_staleness]
        self.pending = [g for g in self.pending if step - g.version <= grpo.max_staleness]
        packed = pack(self.pending[: self.prompts_per_step], rows=grpo.rows, horizon=grpo.horizon)
        self.pending = packed.leftover + self.pending[self.prompts_per_step:]
        return StepBatch(split_microbatches(packed.batch, grpo.microbatches),
                         [group.position for group in packed.packed],
                         [group.version for group in packed.packed], stale,
                         packed.trajectories, packed.tokens, packed.completion_tokens)
