"""Group sampling by compaction: one prefill per distinct prompt, then the static sampler's
cache segments, with the rows that have stopped dropped from the batch as it runs.

Dimension letters (`jaxopt_rl.dimensions`): P distinct prompts, L prompt length (after left
padding), B rows of the batch in a segment, O new-token budget.

Why compaction rather than slots (`slots.py`), and the default. Continuous batching keeps a fixed number of
decode slots busy, but every slot's cache must hold L + O positions, and a decode step reads all
of them: on a CPU, whose steps are bound by memory bandwidth, that costs what the idle rows
saved (the rollout benchmark in `benchmarks/sampler.py` measures both). Here the rows stay in
lock step, so the cache grows by segments exactly as in `loop.py` (a step reads at most one
segment more than is filled), and the rows that have stopped leave the batch as soon as they are
half of it. What is left idle is at most half a batch, until that half has stopped.

How. The prefill and each segment are one jitted call each (`compiled_group_prefill`,
`compiled_segment`, built on `loop.prefill` and `loop.decode_segment`); the host loop between
the calls is `host.generate` with ``scheme="compact"``. A call ends at its segment's last token, or as soon as the rows still
running fit the next size of a halving ladder (B, B/2, B/4 ... kept a multiple of the batch
shards, and none below `MIN_BATCH_ROWS`). Then the host reads the rows' `finished` flags,
keeps each stopped row's result, and calls again with only the surviving rows, padded with
repeats of a surviving row (marked stopped) up to that size, over the same cache length or
the next segment's. A stream of calls compiles few shapes (one per segment and ladder size
used). Rows are gathered on device; the draws are keyed by (row id, step) as everywhere, so the
result is the static sampler's. On several processes every one reads the same flags (gathered)
and takes the same decisions.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import nnx
from jax.sharding import Mesh

from jaxopt_rl.model import partitioning
from jaxopt_rl.sampling.loop import (
    JitCache,
    LoopSettings,
    cache_sharding,
    decode_segment,
    prefill,
)
from jaxopt_rl.sampling.state import SamplingState

_compiled = JitCache(size=64)
# Below this many rows a decode step costs about what it costs at this many (on a CPU the weights,
# read once per step, dominate), so a smaller batch saves little and costs another compile.
MIN_BATCH_ROWS = 8


def compiled_group_prefill(
    graphdef: nnx.GraphDef,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
):
    """The jitted ``(params, prompt_PL, start_P, prompt_of_B, row_ids_B, seed) -> SamplingState``."""

    def build():
        def fn(params, prompt_PL, start_P, prompt_of_B, row_ids_B, seed):
            model = nnx.merge(graphdef, params)
            return prefill(
                model, mesh, rules, settings, prompt_PL, start_P, row_ids_B, seed, prompt_of_B
            )

        return jax.jit(fn)

    return _compiled.get(("prefill", graphdef, settings, mesh, rules), build)


def compiled_segment(
    graphdef: nnx.GraphDef,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    prompt_len: int,
    limit: int,
):
    """The jitted ``(params, state, rows_B, live, exit_at_running) -> SamplingState``: the rows
    `rows_B` of `state`, of which the first `live` are real (the rest, repeats that fill the
    batch, are marked stopped), decoded up to token `limit` over a cache of
    ``prompt_len + limit`` slots, or until at most `exit_at_running` rows are still running."""

    def build():
        def fn(params, state, rows_B, live, exit_at_running):
            model = nnx.merge(graphdef, params)
            state = take_rows(state, rows_B, mesh, rules)
            filler_B = jnp.arange(rows_B.shape[0]) >= live
            state = state.replace(finished_B=state.finished_B | filler_B)
            return decode_segment(model, mesh, rules, settings, state, prompt_len, limit,
                                  exit_at_running)

        return jax.jit(fn)

    return _compiled.get(("segment", graphdef, settings, mesh, rules, prompt_len, limit), build)


def take_rows(state: SamplingState, rows_B: jax.Array, mesh: Mesh | None = None,
              rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES) -> SamplingState:
    """The state of rows `rows_B` (a gather on every per-row array, the cache included)."""
    def take(array: jax.Array) -> jax.Array:
        return array[rows_B]

    cache = state.cache
    # On a mesh, rows picked across batch shards are gathered by an all-gather of each layer's
    # whole cache; chained through barriers, one layer's gathered copy is dead before the next
    # is made (unchained, XLA:GPU started all of them at once: 28 x 2 copies of 1 GiB for the
    # 7B's 128 rows, 55 GiB of temporaries per GPU in `jaxopt-rl plan`).
    def pin(array_BKSE: jax.Array) -> jax.Array:
        if mesh is None:
            return array_BKSE
        # the barrier's output keeps the cache's layout, so the gather's all-gather comes after
        # the barrier instead of being moved before it
        return jax.lax.with_sharding_constraint(
            array_BKSE, cache_sharding(array_BKSE.shape, mesh, rules))

    keys, values = _one_layer_at_a_time(take, pin, cache.keys + cache.values)
    return state.replace(
        tokens_BO=take(state.tokens_BO),
        logprobs_BO=take(state.logprobs_BO),
        model_logprobs_BO=take(state.model_logprobs_BO),
        lengths_B=take(state.lengths_B),
        finished_B=take(state.finished_B),
        next_logits_BV=take(state.next_logits_BV),
        row_keys_B=take(state.row_keys_B),
        cache=cache.replace(keys=keys, values=values, start_B=take(cache.start_B)),
    )


def _one_layer_at_a_time(take, pin, arrays: tuple[jax.Array, ...]):
    """``(keys, values)``: `take` of every per-layer cache array (keys then values), each one
    ordered after the previous by `jax.lax.optimization_barrier` (same values)."""
    out: list[jax.Array] = []
    for array in arrays:
        if out:
            # the previous result must come out of the barrier too: a barrier output nobody
            # reads is pruned, and the order with it
            array, out[-1] = jax.lax.optimization_barrier((array, out[-1]))
        out.append(take(pin(array)))
    half = len(out) // 2
    return tuple(out[:half]), tuple(out[half:])


def _half(size: int, shards: int) -> int:
    """The ladder's step: half of `size`, rounded up to a multiple of `shards`."""
    return -(-(size // 2) // shards) * shards


def next_batch_size(rows: int, survivors: int, shards: int, min_rows: int = 1) -> int:
    """The smallest size in the ladder rows, rows/2, rows/4 ... (each rounded up to a multiple
    of `shards`, none below `min_rows` but the first) that holds `survivors` rows."""
    size = rows
    while True:
        half = _half(size, shards)
        if half < max(survivors, min_rows) or half >= size:
            return size
        size = half


def smaller_batch_size(rows: int, shards: int, min_rows: int = 1) -> int:
    """The ladder's next size below `rows` (0 where there is none): a segment call of `rows`
    rows returns as soon as no more than this many are still running."""
    below = _half(rows, shards)
    return below if 0 < below < rows and below >= min_rows else 0
