"""Rows of a train batch: pack whole `Trajectories` (a prompt and its completions, each with
its advantage) into rows of `N` tokens and lay the rows out as microbatches. NumPy only; the
GRPO batch builder (`training.batch`) and the SFT trainer both pack through here.

Dimension letters: G rollouts of a group, R packed rows, U microbatches, L token positions of
a row (L = N, the fixed horizon of one row).

1. `pack`: each trajectory (prompt + completion) goes whole into one row (first fit, a group's
   longest trajectories first); a row holds at most `N` tokens, and a group enters the batch
   whole or not at all, so its positive and negative gradient mass stay in one step. Groups
   that do not fit are returned as left-overs for the next batch, in order.
2. `split_microbatches`: ``[R, L]`` -> ``[U, R / U, L]``, the layout the jitted step scans.

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
from dataclasses import dataclass

import jax
import numpy as np
from flax import struct


@dataclass(frozen=True)
class Trajectories:
    """What `pack` places whole: one prompt and its completions, each with its advantage
    (a selected GRPO group, or one SFT example with advantage 0)."""

    prompt: np.ndarray  # int32 [prompt length], at least one token (e.g. BOS)
    completions: Sequence[np.ndarray]  # G x int32 [completion length], EOS included
    sampler_logps: Sequence[np.ndarray]  # G x float32, the sampler's model_logprobs
    adv_G: np.ndarray  # float32 [G]
    label: str = ""  # the problem id, for error messages
    position: int = -1  # loader position of the prompt (the data cursor); -1: none
    version: int = 0  # optimizer step of the weights that sampled it (GRPO staleness)

    def __post_init__(self) -> None:
        count = len(self.completions)
        if len(self.sampler_logps) != count or np.shape(self.adv_G) != (count,):
            raise ValueError(
                f"group {self.label!r}: {count} completions, {len(self.sampler_logps)} "
                f"log-prob arrays and advantages of shape {np.shape(self.adv_G)}"
            )
        if len(self.prompt) == 0:
            raise ValueError(f"group {self.label!r}: empty prompt (needs at least BOS)")
        for i, (tokens, logp) in enumerate(zip(self.completions, self.sampler_logps)):
            if len(tokens) != len(logp):
                raise ValueError(
                    f"group {self.label!r} rollout {i}: {len(tokens)} tokens but "
                    f"{len(logp)} log-probs"
                )

    def trajectory_length(self, index: int) -> int:
        return len(self.prompt) + len(self.completions[index])


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
    packed: list[Trajectories]
    leftover: list[Trajectories]
    trajectories: int
    tokens: int  # real tokens (prompt + completion) in the batch
    completion_tokens: int


def pack(items: Sequence[Trajectories], *, rows: int, horizon: int) -> PackResult:
    """Pack whole groups into `rows` rows of `horizon` tokens (first fit; see module docstring)."""
    if rows < 1 or horizon < 2:
        raise ValueError(f"need rows >= 1 and horizon >= 2, got rows={rows}, horizon={horizon}")
    fill = [0] * rows
    placed: list[list[tuple[Trajectories, int]]] = [[] for _ in range(rows)]
    packed, leftover = [], []
    for group in items:
        lengths = [group.trajectory_length(i) for i in range(len(group.completions))]
        too_long = [i for i, n in enumerate(lengths) if n > horizon]
        if too_long:
            i = too_long[0]
            raise ValueError(
                f"group {group.label!r} rollout {i}: trajectory of {lengths[i]} tokens "
                f"(prompt {len(group.prompt)}) exceeds the row horizon N={horizon}"
            )
        if sum(lengths) > rows * horizon:
            raise ValueError(
                f"group {group.label!r}: {sum(lengths)} tokens cannot fit in one batch of "
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
            leftover.append(group)
            continue
        fill = trial
        for row, i in spots:
            placed[row].append((group, i))
        packed.append(group)
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
        for segment, (group, i) in enumerate(entries, start=1):
            prompt = np.asarray(group.prompt, np.int32)
            completion = np.asarray(group.completions[i], np.int32)
            n_prompt, n_completion = len(prompt), len(completion)
            end = at + n_prompt + n_completion
            tokens[row, at : at + n_prompt] = prompt
            tokens[row, at + n_prompt : end] = completion
            positions[row, at:end] = np.arange(end - at)
            segment_ids[row, at:end] = segment
            loss_mask[row, at + n_prompt : end] = 1.0
            old_logp[row, at + n_prompt : end] = np.asarray(group.sampler_logps[i])
            adv[row, at + n_prompt : end] = group.adv_G[i]
            at = end
            count += 1
            total += n_prompt + n_completion
            completion_total += n_completion
    batch = PackedBatch(tokens, positions, segment_ids, loss_mask, old_logp, adv)
    return PackResult(batch, packed, leftover, count, total, completion_total)


def split_microbatches(batch: PackedBatch, microbatches: int) -> PackedBatch:
    """``[R, L]`` arrays -> ``[U, R / U, L]`` (microbatch u holds rows u*R/U .. (u+1)*R/U - 1)."""
    rows = batch.tokens.shape[0]
    if microbatches < 1 or rows % microbatches:
        raise ValueError(f"{rows} rows cannot be split into {microbatches} microbatches")
    per = rows // microbatches
    return jax.tree.map(lambda a: a.reshape(microbatches, per, *a.shape[1:]), batch)
