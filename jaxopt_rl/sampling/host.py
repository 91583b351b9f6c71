"""Host side of sampling: check and left-pad prompts, call the compiled sampler, unpad the
result.

`generate` samples G rows per prompt by one of three schemes: one call of the static sampler
(`loop.py`) on each prompt repeated G times, one call of the slot sampler (`slots.py`), or the
compact scheme's calls (`compact.py`): a prefill, then segment calls, reading the rows'
`finished` flags between calls to drop stopped rows.

Dimension letters (`jaxopt_rl.dimensions`): B prompt rows, L padded prompt length, O new tokens
(``max_new_tokens``).

Layout: prompts are **left padded** to a common length L, rounded up to a multiple of
`prompt_multiple` so that a stream of batches reuses a few compiled shapes; the batch is padded
with dummy rows to a multiple of the number of batch shards on the mesh. Padding never changes a
real row's result (the loop masks pads and shifts RoPE positions; randomness is per row id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import jax
import numpy as np
from flax import nnx
from jax.experimental import multihost_utils
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxopt_rl.model import partitioning
from jaxopt_rl.model.transformer import Transformer
from jaxopt_rl.sampling.compact import (
    MIN_BATCH_ROWS,
    compiled_group_prefill,
    compiled_segment,
    next_batch_size,
    smaller_batch_size,
)
from jaxopt_rl.sampling.loop import LoopSettings, SampleArrays, compiled_sampler, results
from jaxopt_rl.sampling.methods import method_from_arguments
from jaxopt_rl.sampling.slots import SlotSettings, compiled_slot_sampler


@dataclass(frozen=True)
class SampleBatch:
    """Generated tokens of each prompt; see `jaxopt_rl.sampling.state` for the conventions.

    `logprobs` are under the sampling distribution (temperature / top-k / top-p; 0 for greedy),
    `model_logprobs` under the raw model at temperature 1 (the trainer's ``logp_old``).
    """

    tokens: np.ndarray  # int32 [B, O], pad after each row's length
    logprobs: np.ndarray  # float32 [B, O], 0 after each row's length
    model_logprobs: np.ndarray  # float32 [B, O], 0 after each row's length
    lengths: np.ndarray  # int32 [B], including the EOS token / stop sequence
    finished: np.ndarray  # bool [B], False: cut at max_new_tokens

    @classmethod
    def first_rows(cls, arrays: SampleArrays, count: int) -> SampleBatch:
        """The first `count` rows of the sampler's (padded) result arrays."""
        return cls(
            tokens=arrays.tokens_BO[:count],
            logprobs=arrays.logprobs_BO[:count],
            model_logprobs=arrays.model_logprobs_BO[:count],
            lengths=arrays.lengths_B[:count],
            finished=arrays.finished_B[:count],
        )

    def completions(self) -> list[list[int]]:
        return [row[:length].tolist() for row, length in zip(self.tokens, self.lengths)]


SCHEMES = ("static", "compact", "slots")


def generate(
    model: Transformer,
    prompts: Sequence[Sequence[int]],
    max_new_tokens: int,
    temperature: float = 1.0,
    top_k: int | None = None,
    top_p: float | None = None,
    stop_tokens: Sequence[int] = (),
    seed: int = 0,
    *,
    group_size: int = 1,
    scheme: str = "static",
    slots: int | None = None,
    stop_sequences: Sequence[Sequence[int]] = (),
    pad_id: int | None = None,
    mesh: Mesh | None = None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
    prompt_multiple: int = 16,
    cache_segments: int = 4,
) -> SampleBatch:
    """`group_size` samples of up to `max_new_tokens` tokens after each prompt
    (``temperature=0``: greedy), row ``p * group_size + g`` for sample ``g`` of prompt ``p``.

    Generation of a row stops after any token in `stop_tokens` or once its tokens end with one
    of `stop_sequences`; the stopping tokens are kept in the output. With `mesh`, rows are split
    over the batch axes and parameters placed per `rules`. `cache_segments` trades compile
    time for decode speed (see `jaxopt_rl.sampling.loop`); it never changes the result.

    `scheme` (the rollout config's `sampler`): ``"static"`` runs the static sampler
    (`jaxopt_rl.sampling.loop`) once on each prompt repeated `group_size` times, every row
    decoding until the longest stops; ``"compact"`` (`jaxopt_rl.sampling.compact`) and
    ``"slots"`` (`jaxopt_rl.sampling.slots`: continuous batching over `slots` decode slots;
    with `mesh`, rounded up to a multiple of the batch shards) prefill each distinct prompt
    once and decode no row that has stopped. All three draw the same rows, up to the float
    rounding of differently shaped batches.
    """
    config = model.config
    settings = _model_settings(model, max_new_tokens, temperature, top_k, top_p, stop_tokens,
                               stop_sequences, pad_id, cache_segments, prompt_multiple)
    if scheme not in SCHEMES:
        raise ValueError(f"scheme must be one of {SCHEMES}, got {scheme!r}")
    _check_positive("group_size", group_size)
    if scheme == "slots":
        _check_positive("slots", slots)
    shards = partitioning.batch_shard_count(mesh, rules)
    rows = prompts  # the rows to prefill: the static sampler takes each prompt G times
    if scheme == "static" and group_size > 1:
        rows = [prompt for prompt in prompts for _ in range(group_size)]
    prompt_BL, start_B = left_pad(rows, settings.pad_id, config.vocab_size, prompt_multiple, shards)
    graphdef, params = nnx.split(model)
    if mesh is not None:
        params = jax.device_put(params, partitioning.param_shardings(params, mesh, rules))
    if scheme == "static":
        arrays = _run_static(graphdef, params, settings, mesh, rules, prompt_BL, start_B, seed)
    else:
        run = _run_slots if scheme == "slots" else _run_compact
        arrays = run(graphdef, params, settings, mesh, rules, prompt_BL, start_B,
                     len(prompts), group_size, seed, slots)
    return SampleBatch.first_rows(arrays, len(prompts) * group_size)


def _run_static(graphdef, params, settings, mesh, rules, prompt_BL, start_B,
                seed) -> SampleArrays:
    """One call of the static sampler over all rows."""
    row_ids_B = np.arange(prompt_BL.shape[0], dtype=np.int32)
    sampler = compiled_sampler(graphdef, params, settings, mesh, rules)
    inputs = [_global(x, mesh, rules) for x in (prompt_BL, start_B, row_ids_B)]
    return _fetch(sampler(params, *inputs, _global(np.uint32(seed), mesh, rules)))


def _run_slots(graphdef, params, settings, mesh, rules, prompt_PL, start_P, prompts, group_size,
               seed, slots) -> SampleArrays:
    shards = partitioning.batch_shard_count(mesh, rules)
    requests = prompts * group_size
    per_shard = -(-requests // shards)
    request_B = np.arange(shards * per_shard, dtype=np.int32)
    shard_prompt_of_B = np.minimum(request_B // group_size, prompts - 1).reshape(shards, -1)
    shard_requests = np.clip(requests - per_shard * np.arange(shards), 0, per_shard).astype(np.int32)
    slot_settings = SlotSettings(
        loop=settings, slots_per_shard=min(-(-slots // shards), per_shard), shards=shards
    )
    sampler = compiled_slot_sampler(graphdef, params, slot_settings, mesh, rules)
    inputs = (prompt_PL, start_P, shard_prompt_of_B, request_B.reshape(shards, -1), shard_requests)
    inputs = [_global(x, mesh, rules) for x in inputs]
    return _fetch(sampler(params, *inputs, _global(np.uint32(seed), mesh, rules)))


def _run_compact(graphdef, params, settings, mesh, rules, prompt_PL, start_P, prompts, group_size,
                 seed, slots) -> SampleArrays:
    """The host side of `compact`: jitted segment calls, each returning when its segment ends
    or half its batch has stopped; stopped rows are dropped between calls."""
    del slots
    shards = partitioning.batch_shard_count(mesh, rules)
    requests = prompts * group_size
    rows = -(-requests // shards) * shards
    row_R = np.arange(rows, dtype=np.int32)  # padding rows (index >= requests) repeat prompt 0
    prompt_of_R = np.where(row_R < requests, row_R // group_size, 0).astype(np.int32)
    budget = settings.max_new_tokens
    out = SampleArrays(
        tokens_BO=np.full((rows, budget), settings.pad_id, np.int32),
        logprobs_BO=np.zeros((rows, budget), np.float32),
        model_logprobs_BO=np.zeros((rows, budget), np.float32),
        lengths_B=np.zeros((rows,), np.int32),
        finished_B=np.zeros((rows,), bool),
    )
    prefill_fn = compiled_group_prefill(graphdef, settings, mesh, rules)
    inputs = [_global(x, mesh, rules) for x in (prompt_PL, start_P, prompt_of_R, row_R)]
    state = prefill_fn(params, *inputs, _global(np.uint32(seed), mesh, rules))
    origin_B = row_R.copy()  # which result row each row of the batch holds
    index_B = np.arange(rows, dtype=np.int32)  # the rows of `state` the next call takes
    live = min(requests, rows)  # rows [0, live) of the batch are real and still running
    limits = iter(settings.segment_limits())
    limit = next(limits)
    while True:
        segment = compiled_segment(graphdef, settings, mesh, rules, prompt_PL.shape[1], limit)
        exit_at = smaller_batch_size(len(index_B), shards, MIN_BATCH_ROWS)
        state = segment(params, state, *(_global(x, mesh, rules) for x in (
            index_B, np.int32(live), np.int32(exit_at))))
        finished_B, step = _fetch((state.finished_B, state.step))
        keep = np.flatnonzero(~finished_B[:live])
        if step >= limit:
            limit = next(limits, None)
        if keep.size == 0 or limit is None:  # all stopped, or the budget is spent (rows cut)
            _store_rows(out, state, origin_B[:live], np.arange(live))
            return out
        stopped = np.flatnonzero(finished_B[:live])
        _store_rows(out, state, origin_B[stopped], stopped)
        size = next_batch_size(len(index_B), keep.size, shards, MIN_BATCH_ROWS)
        index_B = np.concatenate([keep, np.full(size - keep.size, keep[0])]).astype(np.int32)
        origin_B, live = origin_B[index_B], keep.size


def _store_rows(out: SampleArrays, state, origins: np.ndarray, rows: np.ndarray) -> None:
    """Copy batch rows `rows` of the device `state` into result rows `origins` of `out`."""
    if rows.size == 0:
        return
    arrays = _fetch(results(state))
    for name in ("tokens_BO", "logprobs_BO", "model_logprobs_BO", "lengths_B", "finished_B"):
        getattr(out, name)[origins] = getattr(arrays, name)[rows]


def _check_positive(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")


def _model_settings(model: Transformer, max_new_tokens, temperature, top_k, top_p, stop_tokens,
                    stop_sequences, pad_id, cache_segments, prompt_multiple) -> LoopSettings:
    """`loop_settings` for this model (pad id defaulting to the model's), prompt_multiple checked."""
    if prompt_multiple < 1:
        raise ValueError(f"prompt_multiple must be >= 1, got {prompt_multiple}")
    config = model.config
    return loop_settings(
        config.vocab_size,
        max_new_tokens,
        temperature,
        top_k,
        top_p,
        stop_tokens,
        stop_sequences,
        (config.pad_token_id or 0) if pad_id is None else pad_id,
        cache_segments,
    )


def loop_settings(
    vocab_size: int,
    max_new_tokens: int,
    temperature: float,
    top_k: int | None,
    top_p: float | None,
    stop_tokens: Sequence[int],
    stop_sequences: Sequence[Sequence[int]],
    pad_id: int,
    cache_segments: int = 4,
) -> LoopSettings:
    """Validate `generate`'s knobs (errors name the argument) into the loop's static settings."""
    method = method_from_arguments(temperature, top_k, top_p)
    if isinstance(max_new_tokens, bool) or not isinstance(max_new_tokens, int):
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    if max_new_tokens < 1:
        raise ValueError(f"max_new_tokens must be a positive integer, got {max_new_tokens!r}")
    _check_ids([pad_id], vocab_size, "pad_id")
    _check_ids(stop_tokens, vocab_size, "stop_tokens")
    for index, sequence in enumerate(stop_sequences):
        if not sequence:
            raise ValueError(f"stop_sequences[{index}] is empty")
        _check_ids(sequence, vocab_size, f"stop_sequences[{index}]")
    return LoopSettings(
        method=method,
        max_new_tokens=max_new_tokens,
        stop_tokens=tuple(int(t) for t in stop_tokens),
        stop_sequences=tuple(tuple(int(t) for t in s) for s in stop_sequences),
        pad_id=int(pad_id),
        cache_segments=cache_segments,
    )


def left_pad(
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    vocab_size: int,
    prompt_multiple: int = 1,
    batch_multiple: int = 1,
) -> tuple[np.ndarray, np.ndarray]:
    """``(prompt_BL, start_B)``: prompts right-aligned in a ``[B', L]`` int32 array (B' and L
    rounded up to the multiples; dummy rows hold a single pad token) and each row's pad count."""
    if isinstance(prompts, np.ndarray) and prompts.ndim != 2:
        raise ValueError(
            f"prompts must be a list of token-id lists, got an array of shape {prompts.shape}"
        )
    if len(prompts) == 0:
        raise ValueError("prompts is empty")
    lengths = []
    for row, prompt in enumerate(prompts):
        if len(prompt) == 0:
            raise ValueError(
                f"prompts[{row}] is empty (a prompt needs at least one token, e.g. BOS)"
            )
        _check_ids(prompt, vocab_size, f"prompts[{row}]")
        lengths.append(len(prompt))
    prompt_len = -(-max(lengths) // prompt_multiple) * prompt_multiple
    rows = -(-len(prompts) // batch_multiple) * batch_multiple
    prompt_BL = np.full((rows, prompt_len), pad_id, np.int32)
    start_B = np.full((rows,), prompt_len - 1, np.int32)
    for row, prompt in enumerate(prompts):
        prompt_BL[row, prompt_len - len(prompt) :] = np.asarray(prompt, np.int32)
        start_B[row] = prompt_len - len(prompt)
    return prompt_BL, start_B


def _global(array: np.ndarray, mesh: Mesh | None, rules: partitioning.ShardingRules):
    """A host array as the sampler's input: rows on the batch axes (scalars replicated). Every
    process passes the same full array (multi-host SPMD); each device takes its own block."""
    if mesh is None:
        return array
    if array.ndim == 0:
        sharding = NamedSharding(mesh, PartitionSpec())
    else:
        sharding = partitioning.batch_sharding(mesh, array.ndim, rules)
    return jax.make_array_from_callback(array.shape, sharding, lambda index: array[index])


def _fetch(tree):
    """Device results as NumPy on every process (gathering rows held by other hosts)."""

    def fetch(array: jax.Array) -> np.ndarray:
        if not array.is_fully_addressable:
            array = multihost_utils.process_allgather(array, tiled=True)
        return np.asarray(array)

    return jax.tree.map(fetch, tree)


def _check_ids(ids: Sequence[int], vocab_size: int, what: str) -> None:
    array = np.asarray(ids)
    if array.size == 0:
        return
    if not np.issubdtype(array.dtype, np.integer):
        raise ValueError(f"{what}: token ids must be integers, got {array.dtype}")
    bad = np.flatnonzero((array < 0) | (array >= vocab_size))
    if bad.size:
        raise ValueError(
            f"{what}[{bad[0]}] = {array[bad[0]]} is outside the vocabulary [0, {vocab_size})"
        )
