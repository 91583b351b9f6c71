"""The jit boundary of sampling: one prefill, then a `lax.while_loop` that draws one token per
row per iteration over a preallocated KV cache. No Python runs per token.

Dimension letters: B batch rows, P prompt length (after left padding), N new-token budget,
V vocabulary, D model width.

`sample_arrays` is pure: (model parameters, left-padded prompts, per-row pad counts, per-row
ids, seed) -> `SampleArrays`. Each iteration draws token ``step`` from the logits left by the
previous one, records it and its log-probs (see `state.py` for what each array holds), checks
EOS / stop sequences, then feeds the token through the model; the loop ends when every row has
stopped or N tokens are drawn. Row ``b``'s randomness is ``fold_in(fold_in(key(seed), row_id_b),
step)``, so a prompt's sample depends only on (seed, row id, prompt), not on the rest of the
batch, its padding, or the mesh.

`compiled_sampler` caches one `jax.jit` per (model structure, settings, mesh, rules), with the
parameter shardings from `partitioning`, rows on the batch mesh axes, and the cache constrained
to the same rules.
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

from jaxopt_rl.model import partitioning
from jaxopt_rl.model.transformer import KVCache
from jaxopt_rl.sampling.methods import SamplingMethod
from jaxopt_rl.sampling.state import SamplingState, ends_with_stop_sequence, is_stop_token


@dataclass(frozen=True)
class LoopSettings:
    """Static (compile-time) knobs of the loop; hashable, so they key the compilation cache."""

    method: SamplingMethod
    max_new_tokens: int
    stop_tokens: tuple[int, ...] = ()
    stop_sequences: tuple[tuple[int, ...], ...] = ()
    pad_id: int = 0


@struct.dataclass
class SampleArrays:
    tokens_BN: jax.Array
    logprobs_BN: jax.Array
    model_logprobs_BN: jax.Array
    lengths_B: jax.Array
    finished_B: jax.Array


def sample_arrays(
    graphdef: nnx.GraphDef,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    params: nnx.State,
    prompt_BP: jax.Array,
    start_B: jax.Array,
    row_ids_B: jax.Array,
    seed: jax.Array,
) -> SampleArrays:
    """Sample up to ``settings.max_new_tokens`` tokens after each left-padded prompt row."""
    model = nnx.merge(graphdef, params)
    batch, prompt_len = prompt_BP.shape
    budget = settings.max_new_tokens
    cache = KVCache.empty(model.config, start_B, prompt_len + budget)
    if mesh is not None:
        cache = _constrain_cache(cache, mesh, rules)
    hidden_BPD, cache = model.decode_hidden(prompt_BP, cache)
    base_key = jax.random.key(seed)
    state = SamplingState(
        step=jnp.zeros((), jnp.int32),
        tokens_BN=jnp.full((batch, budget), settings.pad_id, jnp.int32),
        logprobs_BN=jnp.zeros((batch, budget), jnp.float32),
        model_logprobs_BN=jnp.zeros((batch, budget), jnp.float32),
        lengths_B=jnp.zeros((batch,), jnp.int32),
        finished_B=jnp.zeros((batch,), bool),
        next_logits_BV=model.logits(hidden_BPD[:, -1]).astype(jnp.float32),
        row_keys_B=jax.vmap(jax.random.fold_in, (None, 0))(base_key, row_ids_B),
        cache=cache,
    )

    def keep_going(state: SamplingState) -> jax.Array:
        return (state.step < budget) & ~jnp.all(state.finished_B)

    def step(state: SamplingState) -> SamplingState:
        keys_B = jax.vmap(jax.random.fold_in, (0, None))(state.row_keys_B, state.step)
        token_B, logprob_B = settings.method.sample(state.next_logits_BV, keys_B)
        model_logp_BV = jax.nn.log_softmax(state.next_logits_BV, axis=-1)
        model_logprob_B = jnp.take_along_axis(model_logp_BV, token_B[:, None], axis=-1)[:, 0]
        active_B = ~state.finished_B
        token_B = jnp.where(active_B, token_B, settings.pad_id)
        at = (0, state.step)
        tokens_BN = jax.lax.dynamic_update_slice(state.tokens_BN, token_B[:, None], at)
        logprobs_BN = jax.lax.dynamic_update_slice(
            state.logprobs_BN, jnp.where(active_B, logprob_B, 0.0)[:, None], at
        )
        model_logprobs_BN = jax.lax.dynamic_update_slice(
            state.model_logprobs_BN, jnp.where(active_B, model_logprob_B, 0.0)[:, None], at
        )
        stopped_B = is_stop_token(token_B, settings.stop_tokens) | ends_with_stop_sequence(
            tokens_BN, state.step, settings.stop_sequences
        )
        hidden_B1D, cache = model.decode_hidden(token_B[:, None], state.cache)
        return SamplingState(
            step=state.step + 1,
            tokens_BN=tokens_BN,
            logprobs_BN=logprobs_BN,
            model_logprobs_BN=model_logprobs_BN,
            lengths_B=jnp.where(active_B, state.step + 1, state.lengths_B),
            finished_B=state.finished_B | (active_B & stopped_B),
            next_logits_BV=model.logits(hidden_B1D[:, 0]).astype(jnp.float32),
            row_keys_B=state.row_keys_B,
            cache=cache,
        )

    state = jax.lax.while_loop(keep_going, step, state)
    return SampleArrays(
        tokens_BN=state.tokens_BN,
        logprobs_BN=state.logprobs_BN,
        model_logprobs_BN=state.model_logprobs_BN,
        lengths_B=state.lengths_B,
        finished_B=state.finished_B,
    )


_CACHE_SIZE = 16
_compiled: collections.OrderedDict[Any, Any] = collections.OrderedDict()
_compiled_lock = threading.Lock()  # rollout workers may sample from several threads


def compiled_sampler(
    graphdef: nnx.GraphDef,
    params: nnx.State,
    settings: LoopSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
):
    """The jitted ``(params, prompt_BP, start_B, row_ids_B, seed) -> SampleArrays`` for this model
    structure and settings (cached; `params` only supplies the parameter tree's shape)."""
    key = (graphdef, settings, mesh, rules)
    with _compiled_lock:
        if key in _compiled:
            _compiled.move_to_end(key)
            return _compiled[key]
    fn = functools.partial(sample_arrays, graphdef, settings, mesh, rules)
    if mesh is None:
        jitted = jax.jit(fn)
    else:
        rows_2d = partitioning.batch_sharding(mesh, 2, rules)
        rows_1d = partitioning.batch_sharding(mesh, 1, rules)
        replicated = NamedSharding(mesh, PartitionSpec())
        jitted = jax.jit(
            fn,
            in_shardings=(
                partitioning.param_shardings(params, mesh, rules),
                rows_2d,
                rows_1d,
                rows_1d,
                replicated,
            ),
            out_shardings=SampleArrays(rows_2d, rows_2d, rows_2d, rows_1d, rows_1d),
        )
    with _compiled_lock:
        _compiled[key] = jitted
        if len(_compiled) > _CACHE_SIZE:
            _compiled.popitem(last=False)
    return jitted


def _constrain_cache(cache: KVCache, mesh: Mesh, rules: partitioning.ShardingRules) -> KVCache:
    def constrain(array_BKSH: jax.Array) -> jax.Array:
        sharding = partitioning.sharding_for(
            array_BKSH.shape, partitioning.CACHE_LOGICAL_AXES, mesh, rules
        )
        return jax.lax.with_sharding_constraint(array_BKSH, sharding)

    return cache.replace(
        keys=tuple(constrain(k) for k in cache.keys),
        values=tuple(constrain(v) for v in cache.values),
    )
