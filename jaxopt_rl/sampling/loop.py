"""The static sampler's jit boundary: one prefill, then `lax.while_loop`s that draw one token
per row per iteration over a KV cache that grows between loops. No Python runs per token. Its
`prefill` and `decode_segment` are also the compact scheme's steps (`compact.py`), and
`JitCache`, `jit_sampler` and `constrain_cache` serve every scheme.

Dimension letters (`jaxopt_rl.dimensions`): B batch rows, L prompt length (after left padding),
O new-token budget, V vocabulary, D model width, K key/value heads, S cache slots, E head width.

`sample_arrays` is pure: (model parameters, left-padded prompts, per-row pad counts, per-row
ids, seed) -> `SampleArrays`. Each iteration draws token ``step`` from the logits left by the
previous one, records it and its log-probs (see `state.py` for what each array holds), checks
EOS / stop sequences, then feeds the token through the model; the loops end when every row has
stopped or O tokens are drawn. Row ``b``'s randomness is ``fold_in(fold_in(key(seed), row_id_b),
step)``, so a prompt's sample depends only on (seed, row id, prompt), not on the rest of the
batch, its padding, the mesh or the cache segmentation.

Cost model (what the layout below is for). A decode step at batch 8 is memory-bound: it
streams every weight once (the matmul floor) plus every slot of every layer's KV cache, filled
or not; at a 1.6k-slot cache the tiny model reads ~3x more cache than weights. So:

* the prefill attends over a L-slot cache (not L + O), and the budget is cut into
  ``LoopSettings.cache_segments`` runs, each a `while_loop` over a cache of L + (tokens so far
  + one segment) slots, grown by one copy between runs (`KVCache.grow`): the cache read per
  step drops from L + O slots to at most one segment more than are filled. Each run is a
  separate loop body for XLA to compile; runs shorter than `MIN_SEGMENT_TOKENS` are merged.
  Choice: 4 segments by default. Tiny model, batch 8, CPU: L=64, O=256: -12 % step time for
  +1 s of compile (1 loop body -> 4); L=128, O=1024: -30 % (8 segments: -39 %).
* greedy and categorical draws avoid XLA:CPU's slow variadic argmax (`methods.first_argmax`).

`compiled_sampler` caches one `jax.jit` per (model structure, settings, mesh, rules), with the
parameter shardings from `partitioning`, rows on the batch mesh axes, and the cache constrained
to the same rules after every growth (`constrain_cache`).
"""

from __future__ import annotations

import collections
import functools
import threading
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
from flax import nnx, struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxopt_rl.config import require
from jaxopt_rl.model import partitioning
from jaxopt_rl.model.transformer import KVCache
from jaxopt_rl.sampling.methods import SamplingMethod
from jaxopt_rl.sampling.state import SamplingState, ends_with_stop_sequence, is_stop_token

MIN_SEGMENT_TOKENS = 64  # below this an extra compiled loop costs more than the slots it saves


@dataclass(frozen=True)
class LoopSettings:
    """Static (compile-time) knobs of the loop; hashable, so they key the compilation cache."""

    method: SamplingMethod
    max_new_tokens: int
    stop_tokens: tuple[int, ...] = ()
    stop_sequences: tuple[tuple[int, ...], ...] = ()
    pad_id: int = 0
    cache_segments: int = 4

    def __post_init__(self) -> None:
        require(
            type(self.cache_segments) is int and self.cache_segments >= 1,
            "cache_segments",
            f"must be a positive integer, got {self.cache_segments!r}",
        )

    def segment_limits(self) -> tuple[int, ...]:
        """The token counts at which the decode loops end: the budget cut into at most
        `cache_segments` equal runs of at least `MIN_SEGMENT_TOKENS` (the last may be shorter).
        Run ``i`` decodes over a cache of ``L + limits[i]`` slots."""
        budget = self.max_new_tokens
        segments = max(1, min(self.cache_segments, budget // MIN_SEGMENT_TOKENS))
        size = -(-budget // segments)
        return (*range(size, budget, size), budget)


@struct.dataclass
class SampleArrays:
    tokens_BO: jax.Array
    logprobs_BO: jax.Array
    model_logprobs_BO: jax.Array
    lengths_B: jax.Array
    finished_B: jax.Array


def sample_arrays(
    graphdef: nnx.GraphDef,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    params: nnx.State,
    prompt_BL: jax.Array,
    start_B: jax.Array,
    row_ids_B: jax.Array,
    seed: jax.Array,
) -> SampleArrays:
    """Sample up to ``settings.max_new_tokens`` tokens after each left-padded prompt row."""
    model = nnx.merge(graphdef, params)
    state = prefill(model, mesh, rules, settings, prompt_BL, start_B, row_ids_B, seed)
    for limit in settings.segment_limits():
        state = decode_segment(model, mesh, rules, settings, state, prompt_BL.shape[1], limit)
    return results(state)


def prefill(
    model,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    settings: LoopSettings,
    prompt_PL: jax.Array,
    start_P: jax.Array,
    row_ids_B: jax.Array,
    seed: jax.Array,
    prompt_of_B: jax.Array | None = None,
) -> SamplingState:
    """The state before the first draw: the prompts' cache (L slots) and next-token logits.

    Without `prompt_of_B` row ``b`` is prompt ``b``; with it, the P distinct prompts are
    prefilled once and row ``b`` starts from a copy of prompt ``prompt_of_B[b]``'s cache (a
    GRPO group's G rows share one prefill)."""
    cache = constrain_cache(KVCache.empty(model.config, start_P, prompt_PL.shape[1]), mesh, rules)
    hidden_PLD, cache = model.decode_hidden(prompt_PL, cache)
    logits_PV = model.logits(hidden_PLD[:, -1]).astype(jnp.float32)
    if prompt_of_B is not None:
        cache = cache.replace(
            keys=tuple(k[prompt_of_B] for k in cache.keys),
            values=tuple(v[prompt_of_B] for v in cache.values),
            start_B=cache.start_B[prompt_of_B],
        )
        logits_PV = logits_PV[prompt_of_B]
    batch, budget = row_ids_B.shape[0], settings.max_new_tokens
    base_key = jax.random.key(seed)
    return SamplingState(
        step=jnp.zeros((), jnp.int32),
        tokens_BO=jnp.full((batch, budget), settings.pad_id, jnp.int32),
        logprobs_BO=jnp.zeros((batch, budget), jnp.float32),
        model_logprobs_BO=jnp.zeros((batch, budget), jnp.float32),
        lengths_B=jnp.zeros((batch,), jnp.int32),
        finished_B=jnp.zeros((batch,), bool),
        next_logits_BV=logits_PV,
        row_keys_B=jax.vmap(jax.random.fold_in, (None, 0))(base_key, row_ids_B),
        cache=constrain_cache(cache, mesh, rules),
    )


def decode_segment(
    model,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    settings: LoopSettings,
    state: SamplingState,
    prompt_len: int,
    limit: int,
    exit_at_running: jax.Array | int = 0,
) -> SamplingState:
    """Grow the cache to ``prompt_len + limit`` slots and draw until token `limit`, or until at
    most `exit_at_running` rows are still running (0: every row has stopped)."""

    def keep_going(state: SamplingState) -> jax.Array:
        running = jnp.sum(~state.finished_B, dtype=jnp.int32)
        return (state.step < limit) & (running > exit_at_running)

    def step(state: SamplingState) -> SamplingState:
        keys_B = jax.vmap(jax.random.fold_in, (0, None))(state.row_keys_B, state.step)
        token_B, logprob_B = settings.method.sample(state.next_logits_BV, keys_B)
        model_logp_BV = jax.nn.log_softmax(state.next_logits_BV, axis=-1)
        model_logprob_B = jnp.take_along_axis(model_logp_BV, token_B[:, None], axis=-1)[:, 0]
        active_B = ~state.finished_B
        token_B = jnp.where(active_B, token_B, settings.pad_id)
        at = (0, state.step)
        tokens_BO = jax.lax.dynamic_update_slice(state.tokens_BO, token_B[:, None], at)
        logprobs_BO = jax.lax.dynamic_update_slice(
            state.logprobs_BO, jnp.where(active_B, logprob_B, 0.0)[:, None], at
        )
        model_logprobs_BO = jax.lax.dynamic_update_slice(
            state.model_logprobs_BO, jnp.where(active_B, model_logprob_B, 0.0)[:, None], at
        )
        stopped_B = is_stop_token(token_B, settings.stop_tokens) | ends_with_stop_sequence(
            tokens_BO, state.step, settings.stop_sequences
        )
        hidden_B1D, cache = model.decode_hidden(token_B[:, None], state.cache)
        return SamplingState(
            step=state.step + 1,
            tokens_BO=tokens_BO,
            logprobs_BO=logprobs_BO,
            model_logprobs_BO=model_logprobs_BO,
            lengths_B=jnp.where(active_B, state.step + 1, state.lengths_B),
            finished_B=state.finished_B | (active_B & stopped_B),
            next_logits_BV=model.logits(hidden_B1D[:, 0]).astype(jnp.float32),
            row_keys_B=state.row_keys_B,
            cache=cache,
        )

    state = state.replace(cache=constrain_cache(state.cache.grow(prompt_len + limit), mesh, rules))
    return jax.lax.while_loop(keep_going, step, state)


def results(state: SamplingState) -> SampleArrays:
    return SampleArrays(
        tokens_BO=state.tokens_BO,
        logprobs_BO=state.logprobs_BO,
        model_logprobs_BO=state.model_logprobs_BO,
        lengths_B=state.lengths_B,
        finished_B=state.finished_B,
    )


class JitCache:
    """The jitted sampler functions built so far, keyed by everything static about them (model
    structure, settings, mesh, rules); least recently used first out. Rollout workers may
    sample from several threads, hence the lock."""

    def __init__(self, size: int = 16):
        self.size = size
        self._built: collections.OrderedDict[Any, Any] = collections.OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Any, build):
        with self._lock:
            if key in self._built:
                self._built.move_to_end(key)
                return self._built[key]
        jitted = build()
        with self._lock:
            self._built[key] = jitted
            if len(self._built) > self.size:
                self._built.popitem(last=False)
        return jitted


_compiled = JitCache()


def compiled_sampler(
    graphdef: nnx.GraphDef,
    params: nnx.State,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
):
    """The jitted ``(params, prompt_BL, start_B, row_ids_B, seed) -> SampleArrays`` for this model
    structure and settings (cached; `params` only supplies the parameter tree's shape)."""

    def build():
        fn = functools.partial(sample_arrays, graphdef, settings, mesh, rules)
        return jit_sampler(fn, params, mesh, rules, row_input_dims=(2, 1, 1))

    return _compiled.get((graphdef, settings, mesh, rules), build)


def jit_sampler(fn, params: nnx.State, mesh: Mesh | None, rules: partitioning.ShardingRules,
                row_input_dims: tuple[int, ...]):
    """`jax.jit` of a sampler ``fn(params, *row_inputs, seed) -> SampleArrays``: on a mesh the
    parameters are placed per `rules`, the row inputs (of these ranks) and the results have
    rows on the batch axes, and the seed is replicated."""
    if mesh is None:
        return jax.jit(fn)
    rows_2d = partitioning.batch_sharding(mesh, 2, rules)
    rows_1d = partitioning.batch_sharding(mesh, 1, rules)
    rows = [partitioning.batch_sharding(mesh, ndim, rules) for ndim in row_input_dims]
    return jax.jit(
        fn,
        in_shardings=(
            partitioning.param_shardings(params, mesh, rules),
            *rows,
            NamedSharding(mesh, PartitionSpec()),
        ),
        out_shardings=SampleArrays(rows_2d, rows_2d, rows_2d, rows_1d, rows_1d),
    )


def cache_sharding(shape: tuple[int, ...], mesh: Mesh, rules: partitioning.ShardingRules,
                   rows_on_batch_axes: bool = True) -> NamedSharding:
    """Where one layer's ``[B, K, S, E]`` cache array lives on the mesh: heads per `rules`, rows
    on the batch axes or, with `rows_on_batch_axes` False, replicated over them."""
    logical = partitioning.CACHE_LOGICAL_AXES
    if not rows_on_batch_axes:
        logical = (None, *logical[1:])
    return partitioning.sharding_for(shape, logical, mesh, rules)


def constrain_cache(cache: KVCache, mesh: Mesh | None, rules: partitioning.ShardingRules,
                    rows_on_batch_axes: bool = True) -> KVCache:
    """The cache pinned to `cache_sharding` (unchanged without a mesh). Every sampler
    constrains its cache after each growth or refill, so XLA never picks a layout of its own.
    Replicated rows are the slot sampler's prompt caches, which every batch shard copies from."""
    if mesh is None:
        return cache

    def place(array_BKSE: jax.Array) -> jax.Array:
        sharding = cache_sharding(array_BKSE.shape, mesh, rules, rows_on_batch_axes)
        return jax.lax.with_sharding_constraint(array_BKSE, sharding)

    return cache.replace(keys=tuple(map(place, cache.keys)), values=tuple(map(place, cache.values)))
