"""The jit boundary of group sampling: one prefill per distinct prompt, then continuous batching
of its G requests over a fixed number of decode slots, all inside one `lax.while_loop`.

Dimension letters (`jaxopt_rl.dimensions`): P distinct prompts, L prompt length (after left
padding), R requests (rows of the result: ``p * G + g`` is sample ``g`` of prompt ``p``), O
new-token budget, V vocabulary, K key/value heads, S cache slots per decode slot (L + O), E head
width; and two of this file's own: H batch shards (the product of the mesh's batch axes), N
decode slots per shard.

Why (a GRPO rollout is not a generic batch). Each prompt is sampled G times and completion
lengths vary widely, so the static sampler (`loop.py`) prefills the same prompt G times and
keeps decoding every row until the longest one ends. Here:

* **Shared prefill.** The P distinct prompts are prefilled once; their KV caches and last
  logits are kept (replicated over the batch shards) and copied into a decode slot whenever
  that slot starts one of the prompt's requests: starting a request costs a copy, not a prefill.
* **No compute for finished rows.** Each shard owns H-th of the requests and N slots. An
  iteration draws one token in every busy slot; a slot whose request stopped (EOS, stop
  sequence, or budget) takes the shard's next waiting request in the same iteration. The loop
  ends when every request is done; only the last requests of a shard leave slots idle.
* **Same draws as the static sampler.** A request's randomness is
  ``fold_in(fold_in(key(seed), row_id), step)`` exactly as in `loop.py`, and its logits depend
  only on its own prompt and tokens, so a request's sample does not depend on which slot ran it,
  when, or beside whom; greedy and seeded samples equal the static sampler's rows up to float
  rounding of a differently shaped batch.

Layout. Decode slot ``n`` holds its request's prompt left-padded in cache slots ``[0, L)`` and
the request's generated tokens from slot L on; the cache carries one fill count per decode slot
(`KVCache.length` of shape ``[H * N]``) so that every slot writes and masks at its own step. A
finished request's tokens left in the cache are masked (slots beyond the new request's step)
and overwritten as the new request advances. Bookkeeping arrays are ``[H, ...]`` with the shard
axis on the mesh's batch axes, so every index a shard uses stays on its own devices (the
request arrays are indexed per shard, never across shards); the model sees the slots flattened.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from flax import nnx, struct
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxopt_rl.config import require
from jaxopt_rl.model import partitioning
from jaxopt_rl.model.transformer import KVCache
from jaxopt_rl.sampling.loop import JitCache, LoopSettings, SampleArrays
from jaxopt_rl.sampling.state import ends_with_stop_sequence, is_stop_token


@dataclass(frozen=True)
class SlotSettings:
    """Static knobs of the slot loop (they key the compilation cache)."""

    loop: LoopSettings
    slots_per_shard: int  # N
    shards: int  # H

    def __post_init__(self) -> None:
        require(self.slots_per_shard >= 1, "slots", f"must be >= 1, got {self.slots_per_shard}")
        require(self.shards >= 1, "shards", f"must be >= 1, got {self.shards}")


@struct.dataclass
class SlotState:
    """What the loop carries. ``request_HN == requests per shard`` marks an idle slot."""

    request_HN: jax.Array  # int32: the request (index within its shard) decoded in each slot
    step_HN: jax.Array  # int32: tokens that request has drawn so far
    next_request_H: jax.Array  # int32: the shard's first request not yet started
    next_logits_NV: jax.Array  # float32 [H * N, V]: logits of each slot's next token
    cache: KVCache  # [H * N, K, S, E] per layer, `length` of shape [H * N]
    tokens_HRO: jax.Array  # int32 [H, R/H, O]
    logprobs_HRO: jax.Array  # float32, under the sampling distribution
    model_logprobs_HRO: jax.Array  # float32, raw model at temperature 1
    lengths_HR: jax.Array  # int32
    finished_HR: jax.Array  # bool


def slot_sample_arrays(
    graphdef: nnx.GraphDef,
    settings: SlotSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    params: nnx.State,
    prompt_PL: jax.Array,
    start_P: jax.Array,
    prompt_of_HR: jax.Array,
    row_ids_HR: jax.Array,
    requests_H: jax.Array,
    seed: jax.Array,
) -> SampleArrays:
    """Sample each request's completion (``prompt_of_HR``: the prompt of each request; shard
    ``h`` runs its first ``requests_H[h]`` requests, the rest are padding)."""
    loop = settings.loop
    model = nnx.merge(graphdef, params)
    config = model.config
    shards, per_shard = prompt_of_HR.shape
    slots = settings.slots_per_shard
    prompt_len, budget = prompt_PL.shape[1], loop.max_new_tokens
    rows = shards * slots

    def on_shards(array):  # [H, ...]: the shard axis on the batch mesh axes
        if mesh is None:
            return array
        return jax.lax.with_sharding_constraint(
            array, partitioning.batch_sharding(mesh, array.ndim, rules)
        )

    def constrain(cache: KVCache, batch_axis: bool) -> KVCache:
        if mesh is None:
            return cache
        return _constrain_cache(cache, mesh, rules, batch_axis)

    # One prefill per distinct prompt; its cache and last logits are replicated over the shards.
    prompt_cache = constrain(KVCache.empty(config, start_P, prompt_len), True)
    hidden_PLD, prompt_cache = model.decode_hidden(prompt_PL, prompt_cache)
    prompt_cache = constrain(prompt_cache, False)
    prompt_logits_PV = model.logits(hidden_PLD[:, -1]).astype(jnp.float32)
    if mesh is not None:
        prompt_logits_PV = jax.lax.with_sharding_constraint(
            prompt_logits_PV, NamedSharding(mesh, PartitionSpec())
        )

    empty = KVCache.empty(config, jnp.zeros((rows,), jnp.int32), prompt_len + budget)
    state = SlotState(
        request_HN=on_shards(jnp.full((shards, slots), per_shard, jnp.int32)),
        step_HN=on_shards(jnp.zeros((shards, slots), jnp.int32)),
        next_request_H=on_shards(jnp.zeros((shards,), jnp.int32)),
        next_logits_NV=jnp.zeros((rows, config.vocab_size), jnp.float32),
        cache=constrain(empty.replace(length=jnp.full((rows,), prompt_len, jnp.int32)), True),
        tokens_HRO=on_shards(jnp.full((shards, per_shard, budget), loop.pad_id, jnp.int32)),
        logprobs_HRO=on_shards(jnp.zeros((shards, per_shard, budget), jnp.float32)),
        model_logprobs_HRO=on_shards(jnp.zeros((shards, per_shard, budget), jnp.float32)),
        lengths_HR=on_shards(jnp.zeros((shards, per_shard), jnp.int32)),
        finished_HR=on_shards(jnp.zeros((shards, per_shard), bool)),
    )
    base_key = jax.random.key(seed)
    per_shard_take = jax.vmap(lambda values_R, index_N: values_R[index_N])

    def start_requests(state: SlotState, free_HN: jax.Array) -> SlotState:
        """Give each free slot its shard's next waiting request (in slot order)."""
        rank_HN = jnp.cumsum(free_HN, axis=1, dtype=jnp.int32) - 1
        candidate_HN = state.next_request_H[:, None] + rank_HN
        take_HN = free_HN & (candidate_HN < requests_H[:, None])
        request_HN = jnp.where(take_HN, candidate_HN, jnp.where(free_HN, per_shard, state.request_HN))
        state = state.replace(
            request_HN=request_HN,
            step_HN=jnp.where(free_HN, 0, state.step_HN),
            next_request_H=state.next_request_H + jnp.sum(take_HN, axis=1, dtype=jnp.int32),
        )

        def copy_prompts(cache: KVCache, logits_NV: jax.Array) -> tuple[KVCache, jax.Array]:
            take_N = take_HN.reshape(rows)
            prompt_N = per_shard_take(prompt_of_HR, jnp.minimum(request_HN, per_shard - 1))
            prompt_N = prompt_N.reshape(rows)

            # Only the taken slots' prompt regions are written (a scatter whose other updates
            # are dropped), so the cache is updated in place rather than rebuilt.
            target_HN = jnp.where(take_HN, jnp.arange(slots), slots)
            prompt_HN = prompt_N.reshape(shards, slots)

            def refill(slot_cache_NKSE, prompt_cache_PKLE):
                slot_cache_HNKSE = slot_cache_NKSE.reshape(shards, slots, *slot_cache_NKSE.shape[1:])
                written = jax.vmap(
                    lambda cache_NKSE, target_N, prompt_N: cache_NKSE.at[
                        target_N, :, :prompt_len
                    ].set(prompt_cache_PKLE[prompt_N], mode="drop")
                )(slot_cache_HNKSE, target_HN, prompt_HN)
                return written.reshape(slot_cache_NKSE.shape)

            cache = cache.replace(
                keys=tuple(map(refill, cache.keys, prompt_cache.keys)),
                values=tuple(map(refill, cache.values, prompt_cache.values)),
                start_B=jnp.where(take_N, start_P[prompt_N], cache.start_B),
            )
            logits_NV = jnp.where(take_N[:, None], prompt_logits_PV[prompt_N], logits_NV)
            return constrain(cache, True), logits_NV

        cache, logits_NV = jax.lax.cond(
            jnp.any(take_HN),
            copy_prompts,
            lambda cache, logits_NV: (cache, logits_NV),
            state.cache,
            state.next_logits_NV,
        )
        length_N = prompt_len + state.step_HN.reshape(rows)
        return state.replace(cache=cache.replace(length=length_N), next_logits_NV=logits_NV)

    def busy(state: SlotState) -> jax.Array:
        return jnp.any(state.request_HN < per_shard)

    def step(state: SlotState) -> SlotState:
        active_HN = state.request_HN < per_shard
        request_HN = jnp.where(active_HN, state.request_HN, per_shard)  # idle: writes dropped
        row_id_N = per_shard_take(row_ids_HR, jnp.minimum(request_HN, per_shard - 1)).reshape(rows)
        step_N = state.step_HN.reshape(rows)
        keys_N = jax.vmap(lambda row, i: jax.random.fold_in(jax.random.fold_in(base_key, row), i))(
            row_id_N, step_N
        )
        token_N, logprob_N = loop.method.sample(state.next_logits_NV, keys_N)
        model_logp_NV = jax.nn.log_softmax(state.next_logits_NV, axis=-1)
        model_logprob_N = jnp.take_along_axis(model_logp_NV, token_N[:, None], axis=-1)[:, 0]
        token_HN = jnp.where(active_HN, token_N.reshape(shards, slots), loop.pad_id)

        def record(out_HRO, values_HN):
            return jax.vmap(lambda out_RO, r, i, v: out_RO.at[r, i].set(v, mode="drop"))(
                out_HRO, request_HN, state.step_HN, values_HN
            )

        tokens_HRO = record(state.tokens_HRO, token_HN)
        stopped_HN = is_stop_token(token_HN, loop.stop_tokens)
        if loop.stop_sequences:
            history_HNO = per_shard_take(tokens_HRO, jnp.minimum(request_HN, per_shard - 1))
            stopped_N = ends_with_stop_sequence(
                history_HNO.reshape(rows, budget), step_N, loop.stop_sequences
            )
            stopped_HN = stopped_HN | stopped_N.reshape(shards, slots)
        done_HN = active_HN & (stopped_HN | (state.step_HN + 1 >= budget))
        hidden_N1D, cache = model.decode_hidden(token_HN.reshape(rows, 1), state.cache)

        def set_rows(out_HR, values_HN):
            return jax.vmap(lambda out_R, r, v: out_R.at[r].set(v, mode="drop"))(
                out_HR, request_HN, values_HN
            )

        state = state.replace(
            step_HN=state.step_HN + 1,
            next_logits_NV=model.logits(hidden_N1D[:, 0]).astype(jnp.float32),
            cache=constrain(cache, True),
            tokens_HRO=tokens_HRO,
            logprobs_HRO=record(state.logprobs_HRO, logprob_N.reshape(shards, slots)),
            model_logprobs_HRO=record(
                state.model_logprobs_HRO, model_logprob_N.reshape(shards, slots)
            ),
            lengths_HR=set_rows(state.lengths_HR, state.step_HN + 1),
            finished_HR=set_rows(state.finished_HR, stopped_HN),
        )
        return start_requests(state, done_HN | ~active_HN)

    state = start_requests(state, jnp.ones((shards, slots), bool))
    state = jax.lax.while_loop(busy, step, state)
    total = shards * per_shard
    return SampleArrays(
        tokens_BO=state.tokens_HRO.reshape(total, budget),
        logprobs_BO=state.logprobs_HRO.reshape(total, budget),
        model_logprobs_BO=state.model_logprobs_HRO.reshape(total, budget),
        lengths_B=state.lengths_HR.reshape(total),
        finished_B=state.finished_HR.reshape(total),
    )


_compiled = JitCache()


def compiled_slot_sampler(
    graphdef: nnx.GraphDef,
    params: nnx.State,
    settings: SlotSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
):
    """The jitted ``(params, prompt_PL, start_P, prompt_of_HR, row_ids_HR, requests_H, seed) ->
    SampleArrays`` for this model structure and settings (cached like `loop.compiled_sampler`)."""

    def build():
        fn = functools.partial(slot_sample_arrays, graphdef, settings, mesh, rules)
        if mesh is None:
            return jax.jit(fn)
        rows_2d = partitioning.batch_sharding(mesh, 2, rules)
        rows_1d = partitioning.batch_sharding(mesh, 1, rules)
        replicated = NamedSharding(mesh, PartitionSpec())
        return jax.jit(
            fn,
            in_shardings=(
                partitioning.param_shardings(params, mesh, rules),
                rows_2d,
                rows_1d,
                rows_2d,
                rows_2d,
                rows_1d,
                replicated,
            ),
            out_shardings=SampleArrays(rows_2d, rows_2d, rows_2d, rows_1d, rows_1d),
        )

    return _compiled.get((graphdef, settings, mesh, rules), build)


def _constrain_cache(
    cache: KVCache, mesh: Mesh, rules: partitioning.ShardingRules, batch_axis: bool
) -> KVCache:
    """The cache on the mesh: rows on the batch axes (decode slots) or replicated over them
    (the prompts' caches, which every shard copies from); heads per `rules` either way."""
    heads = tuple(partitioning.CACHE_LOGICAL_AXES[1:])
    logical = partitioning.CACHE_LOGICAL_AXES if batch_axis else (None, *heads)

    def place(array_BKSE: jax.Array) -> jax.Array:
        sharding = partitioning.sharding_for(array_BKSE.shape, logical, mesh, rules)
        return jax.lax.with_sharding_constraint(array_BKSE, sharding)

    return cache.replace(keys=tuple(map(place, cache.keys)), values=tuple(map(place, cache.values)))
