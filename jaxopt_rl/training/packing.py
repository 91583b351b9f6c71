"""Host side of a train batch: filter groups, compute their advantages, pack trajectories into
rows of `N` tokens, and lay the rows out as microbatches (NumPy only; nothing here touches a
device).

Dimension letters: G rollouts of a group, R packed rows, U microbatches, L token positions of
a row (L = N, the fixed horizon of one row).

Phases, in the order the trainer runs them (spec training.md §1-2):

1. `select_groups`: drop groups older than ``S_max`` optimizer steps (``step - version >
   S_max``) and groups with no signal (all rewards equal; for RiVER, whose rewards are already
   advantages, all zero); both are counted. The survivors get their advantages
   (`jaxopt_rl.training.grpo.advantages`, token-weighted baseline, no std division; RiVER: as
   is). A reward is used once: nothing here keeps a group for a later step.
2. `pack`: each trajectory (prompt + completion) goes whole into one row (first fit, a group's
   longest trajectories first); a row holds at most `N` tokens, and a group enters the batch
   whole or not at all, so its positive and negative gradient mass stay in one step. Groups
   that do not fit are returned as left-overs for the next batch, in order.
3. `split_microbatches`: ``[R, L]`` -> ``[U, R / U, L]``, the layout the jitted step scans.

`build_batch` runs the three for one step and returns the counts the metrics log.

Row layout: ``segment_ids`` number a row's trajectories 1, 2, ... (0 is padding) and
``positions`` restart at 0 for each, so the model's segment mask keeps packed trajectories
apart and each computes what it would alone. ``loss_mask`` is 1 on completion tokens only;
``old_logp`` holds the sampler's ``model_logprobs`` at those positions (the log-prob contract
of `jaxopt_rl.training.grpo`); ``adv`` the trajectory's advantage on its completion tokens.

Choices: a trajectory longer than `N`, or a group larger than a whole batch, is an error (the
rollout config must keep prompt + max_new_tokens <= N), never silently truncated or split.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import jax
import numpy as np
from flax import struct

from jaxopt_rl.training.config import GRPOConfig
from jaxopt_rl.training.grpo import advantages


@dataclass(frozen=True)
class Group:
    """`G` rollouts of one prompt, as the rollout worker hands them over."""

    prompt: np.ndarray  # int32 [prompt length], at least one token (e.g. BOS)
    completions: Sequence[np.ndarray]  # G x int32 [completion length], EOS included
    sampler_logps: Sequence[np.ndarray]  # G x float32, the sampler's model_logprobs
    rewards: np.ndarray  # float32 [G]
    version: int  # optimizer step of the weights that sampled it
    problem_id: str = ""

    def __post_init__(self) -> None:
        count = len(self.completions)
        if len(self.sampler_logps) != count or np.shape(self.rewards) != (count,):
            raise ValueError(
                f"group {self.problem_id!r}: {count} completions, {len(self.sampler_logps)} "
                f"log-prob arrays and rewards of shape {np.shape(self.rewards)}"
            )
        if len(self.prompt) == 0:
            raise ValueError(f"group {self.problem_id!r}: empty prompt (needs at least BOS)")
        for i, (tokens, logp) in enumerate(zip(self.completions, self.sampler_logps)):
            if len(tokens) != len(logp):
                raise ValueError(
                    f"group {self.problem_id!r} rollout {i}: {len(tokens)} tokens but "
                    f"{len(logp)} log-probs"
                )

    @property
    def lengths_G(self) -> np.ndarray:
        return np.asarray([len(c) for c in self.completions], np.int32)

    def trajectory_length(self, index: int) -> int:
        return len(self.prompt) + len(self.completions[index])


@dataclass(frozen=True)
class ScoredGroup:
    group: Group
    adv_G: np.ndarray  # float32 [G]


@dataclass(frozen=True)
class Selection:
    """What `select_groups` kept, and how many groups each filter dropped."""

    kept: list[ScoredGroup]
    stale: int
    zero_signal: int
    staleness: list[int] = field(default_factory=list)  # of the kept groups, for a histogram

    @property
    def seen(self) -> int:
        return len(self.kept) + self.stale + self.zero_signal


def has_signal(rewards_G: np.ndarray, river: bool = False) -> bool:
    """False when a group's rewards carry no gradient: all equal (GRPO: every advantage is 0),
    or for RiVER (rewards are advantages, not centred) all zero."""
    rewards_G = np.asarray(rewards_G, np.float64)
    if river:
        return bool(np.any(rewards_G != 0.0))
    return bool(rewards_G.size > 1 and np.ptp(rewards_G) > 0.0)


def select_groups(
    groups: Sequence[Group], step: int, *, max_staleness: int, river: bool = False
) -> Selection:
    """Drop stale and zero-signal groups (counted; staleness first), score the rest."""
    kept, staleness = [], []
    stale = zero = 0
    for group in groups:
        lag = step - group.version
        if lag < 0:
            raise ValueError(
                f"group {group.problem_id!r} was sampled by policy version {group.version}, "
                f"newer than the trainer's step {step}"
            )
        if lag > max_staleness:
            stale += 1
            continue
        if not has_signal(group.rewards, river):
            zero += 1
            continue
        adv_G = np.asarray(advantages(group.rewards, group.lengths_G, river=river), np.float32)
        kept.append(ScoredGroup(group, adv_G))
        staleness.append(lag)
    return Selection(kept, stale, zero, staleness)


@struct.dataclass
class PackedBatch:
    """Packed rows `[R, L]` (or `[U, R, L]` after `split_microbatches`); crosses the jit."""

    tokens: np.ndarray  # int32
    positions: np.ndarray  # int32, per trajectory from 0
    segment_ids: np.ndarray  # int32, 1.. per trajectory of a row, 0 padding
    loss_mask: np.ndarray  # float32, 1 on completion tokens
    old_logp: np.ndarray  # float32, the sampler's model_logprobs on completion tokens
    adv: np.ndarray  # float32, the trajectory's advantage on completion tokens


@dataclass(frozen=True)
class PackResult:
    batch: PackedBatch
    packed: list[ScoredGroup]
    leftover: list[ScoredGroup]
    trajectories: int
    tokens: int  # real tokens (prompt + completion) in the batch
    completion_tokens: int


def pack(items: Sequence[ScoredGroup], *, rows: int, horizon: int) -> PackResult:
    """Pack whole groups into `rows` rows of `horizon` tokens (first fit; see module docstring)."""
    if rows < 1 or horizon < 2:
        raise ValueError(f"need rows >= 1 and horizon >= 2, got rows={rows}, horizon={horizon}")
    fill = [0] * rows
    placed: list[list[tuple[ScoredGroup, int]]] = [[] for _ in range(rows)]
    packed, leftover = [], []
    for item in items:
        group = item.group
        lengths = [group.trajectory_length(i) for i in range(len(group.completions))]
        too_long = [i for i, n in enumerate(lengths) if n > horizon]
        if too_long:
            i = too_long[0]
            raise ValueError(
                f"group {group.problem_id!r} rollout {i}: trajectory of {lengths[i]} tokens "
                f"(prompt {len(group.prompt)}) exceeds the row horizon N={horizon}"
            )
        if sum(lengths) > rows * horizon:
            raise ValueError(
                f"group {group.problem_id!r}: {sum(lengths)} tokens cannot fit in one batch of "
                f"{rows} rows x {horizon}"
            )
        trial = list(fill)
        spots = []
        for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
            row = next((r for r in range(rows) if trial[r] + lengths[i] <= horizon), None)
            if row is None:
                break
            trial[row] += lengths[i]
            spots.append((row, i))
        if len(spots) < len(lengths):
            leftover.append(item)
            continue
        fill = trial
        for row, i in spots:
            placed[row].append((item, i))
        packed.append(item)
    return _materialise(placed, rows, horizon, packed, leftover)


def _materialise(placed, rows, horizon, packed, leftover) -> PackResult:
    shape = (rows, horizon)
    tokens = np.zeros(shape, np.int32)
    positions = np.zeros(shape, np.int32)
    segment_ids = np.zeros(shape, np.int32)
    loss_mask = np.zeros(shape, np.float32)
    old_logp = np.zeros(shape, np.float32)
    adv = np.zeros(shape, np.float32)
    count = total = completion_total = 0
    for row, entries in enumerate(placed):
        at = 0
        # Inside a row, trajectories go in group order then rollout order (readable dumps).
        for segment, (item, i) in enumerate(entries, start=1):
            prompt = np.asarray(item.group.prompt, np.int32)
            completion = np.asarray(item.group.completions[i], np.int32)
            n_prompt, n_completion = len(prompt), len(completion)
            end = at + n_prompt + n_completion
            tokens[row, at : at + n_prompt] = prompt
            tokens[row, at + n_prompt : end] = completion
            positions[row, at:end] = np.arange(end - at)
            segment_ids[row, at:end] = segment
            loss_mask[row, at + n_prompt : end] = 1.0
            old_logp[row, at + n_prompt : end] = np.asarray(item.group.sampler_logps[i])
            adv[row, at + n_prompt : end] = item.adv_G[i]
            at = end
            count += 1
            total += n_prompt + n_completion
            completion_total += n_completion
    batch = PackedBatch(tokens, positions, segment_ids, loss_mask, old_logp, adv)
    return PackResult(batch, packed, leftover, count, total, completion_total)


@dataclass(frozen=True)
class BatchPlan:
    """One train step's input: the `[U, R, L]` batch, the groups to offer again next step, and
    the host-side counts the metrics report."""

    batch: PackedBatch
    leftover: list[Group]
    stats: dict[str, float]

    @property
    def empty(self) -> bool:
        """No trajectory packed: the loop must not take a step (AdamW would still move)."""
        return self.stats["batch/trajectories"] == 0


def build_batch(groups: Sequence[Group], step: int, config: GRPOConfig) -> BatchPlan:
    """Filter, score, pack and split `groups` for optimizer step `step` (all phases above)."""
    selection = select_groups(groups, step, max_staleness=config.max_staleness,
                              river=config.river)
    result = pack(selection.kept, rows=config.rows, horizon=config.horizon)
    seen = max(selection.seen, 1)
    packed_ids = {id(item) for item in result.packed}
    lags = [lag for item, lag in zip(selection.kept, selection.staleness)
            if id(item) in packed_ids]
    stats = {
        "groups/seen": float(selection.seen),
        "groups/stale": float(selection.stale),
        "groups/zero_signal": float(selection.zero_signal),
        "groups/packed": float(len(result.packed)),
        "groups/leftover": float(len(result.leftover)),
        "rate/stale": selection.stale / seen,
        "rate/zero_signal": selection.zero_signal / seen,
        "batch/trajectories": float(result.trajectories),
        "batch/tokens": float(result.tokens),
        "batch/completion_tokens": float(result.completion_tokens),
        "batch/fill": result.tokens / (config.rows * config.horizon),
        "staleness/mean": float(np.mean(lags)) if lags else 0.0,
        "staleness/max": float(max(lags)) if lags else 0.0,
    }
    batch = split_microbatches(result.batch, config.microbatches)
    return BatchPlan(batch, [item.group for item in result.leftover], stats)


def split_microbatches(batch: PackedBatch, microbatches: int) -> PackedBatch:
    """``[R, L]`` arrays -> ``[U, R / U, L]`` (microbatch u holds rows u*R/U .. (u+1)*R/U - 1)."""
    rows = batch.tokens.shape[0]
    if microbatches < 1 or rows % microbatches:
        raise ValueError(f"{rows} rows cannot be split into {microbatches} microbatches")
    per = rows // microbatches
    return jax.tree.map(lambda a: a.reshape(microbatches, per, *a.shape[1:]), batch)
