"""The jit boundary of group sampling: one prefill per distinct prompt, then continuous batching
of its G requests over a fixed number of decode slots, all inside one `lax.while_loop`.

Dimension letters (`jaxopt_rl.dimensions`): P distinct prompts, L prompt length (after left
padding), B requests (rows of the result: ``p * G + g`` is sample ``g`` of prompt ``p``), O
new-token budget, V vocabulary, K key/value heads, S cache slots per decode slot (L + O), E head
width, I decode slots. Names starting ``shard_`` carry a leading axis of batch shards (the
product of the mesh's batch axes): ``shard_request_I`` is ``[shards, I]``, I slots per shard;
the model sees the slots flattened (``[shards * I]``, suffix I as well).

Why (a GRPO rollout is not a generic batch). Each prompt is sampled G times and completion
lengths vary widely, so the static sampler (`loop.py`) prefills the same prompt G times and
keeps decoding every row until the longest one ends. Here:

* **Shared prefill.** The P distinct prompts are prefilled once; their KV caches and last
  logits are kept (replicated over the batch shards) and copied into a decode slot whenever
  that slot starts one of the prompt's requests: starting a request costs a copy, not a prefill.
* **No compute for finished rows.** Each shard owns its share of the requests and I slots. An
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
(`KVCache.length` of shape ``[shards * I]``) so that every slot writes and masks at its own step. A
finished request's tokens left in the cache are masked (slots beyond the new request's step)
and overwritten as the new request advances. Bookkeeping arrays (``shard_...``) have the shard
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
from jaxopt_rl.sampling.loop import (
    JitCache,
    LoopSettings,
    SampleArrays,
    constrain_cache,
    jit_sampler,
)
from jaxopt_rl.sampling.state import ends_with_stop_sequence, is_stop_token


@dataclass(frozen=True)
class SlotSettings:
    """Static knobs of the slot loop (they key the compilation cache)."""

    loop: LoopSettings
    slots_per_shard: int  # I
    shards: int  # batch shards

    def __post_init__(self) -> None:
        require(self.slots_per_shard >= 1, "slots", f"must be >= 1, got {self.slots_per_shard}")
        require(self.shards >= 1, "shards", f"must be >= 1, got {self.shards}")


@struct.dataclass
class SlotState:
    """What the loop carries. ``shard_request_I == requests per shard`` marks an idle slot."""

    shard_request_I: jax.Array  # int32: the request (index within its shard) decoded in each slot
    shard_step_I: jax.Array  # int32: tokens that request has drawn so far
    shard_next_request: jax.Array  # int32: the shard's first request not yet started
    next_logits_IV: jax.Array  # float32 [shards * I, V]: logits of each slot's next token
    cache: KVCache  # [shards * I, K, S, E] per layer, `length` [shards * I]
    shard_tokens_BO: jax.Array  # int32 [shards, B / shards, O]
    shard_logprobs_BO: jax.Array  # float32, under the sampling distribution
    shard_model_logprobs_BO: jax.Array  # float32, raw model at temperature 1
    shard_lengths_B: jax.Array  # int32
    shard_finished_B: jax.Array  # bool


def slot_sample_arrays(
    graphdef: nnx.GraphDef,
    settings: SlotSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules,
    params: nnx.State,
    prompt_PL: jax.Array,
    start_P: jax.Array,
    shard_prompt_of_B: jax.Array,
    shard_row_ids_B: jax.Array,
    shard_requests: jax.Array,
    seed: jax.Array,
) -> SampleArrays:
    """Sample each request's completion (``shard_prompt_of_B``: the prompt of each request; shard
    ``h`` runs its first ``shard_requests[h]`` requests, the rest are padding)."""
    loop = settings.loop
    model = nnx.merge(graphdef, params)
    config = model.config
    shards, per_shard = shard_prompt_of_B.shape
    slots = settings.slots_per_shard
    prompt_len, budget = prompt_PL.shape[1], loop.max_new_tokens
    rows = shards * slots

    def on_shards(array):  # [shards, ...]: the shard axis on the batch mesh axes
        if mesh is None:
            return array
        return jax.lax.with_sharding_constraint(
            array, partitioning.batch_sharding(mesh, array.ndim, rules)
        )

    def constrain(cache: KVCache, rows_on_batch_axes: bool) -> KVCache:
        return constrain_cache(cache, mesh, rules, rows_on_batch_axes)

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
        shard_request_I=on_shards(jnp.full((shards, slots), per_shard, jnp.int32)),
        shard_step_I=on_shards(jnp.zeros((shards, slots), jnp.int32)),
        shard_next_request=on_shards(jnp.zeros((shards,), jnp.int32)),
        next_logits_IV=jnp.zeros((rows, config.vocab_size), jnp.float32),
        cache=constrain(empty.replace(length=jnp.full((rows,), prompt_len, jnp.int32)), True),
        shard_tokens_BO=on_shards(jnp.full((shards, per_shard, budget), loop.pad_id, jnp.int32)),
        shard_logprobs_BO=on_shards(jnp.zeros((shards, per_shard, budget), jnp.float32)),
        shard_model_logprobs_BO=on_shards(jnp.zeros((shards, per_shard, budget), jnp.float32)),
        shard_lengths_B=on_shards(jnp.zeros((shards, per_shard), jnp.int32)),
        shard_finished_B=on_shards(jnp.zeros((shards, per_shard), bool)),
    )
    base_key = jax.random.key(seed)
    per_shard_take = jax.vmap(lambda values_B, index_I: values_B[index_I])

    def start_requests(state: SlotState, shard_free_I: jax.Array) -> SlotState:
        """Give each free slot its shard's next waiting request (in slot order)."""
        shard_rank_I = jnp.cumsum(shard_free_I, axis=1, dtype=jnp.int32) - 1
        shard_candidate_I = state.shard_next_request[:, None] + shard_rank_I
        shard_take_I = shard_free_I & (shard_candidate_I < shard_requests[:, None])
        shard_request_I = jnp.where(
            shard_take_I,
            shard_candidate_I,
            jnp.where(shard_free_I, per_shard, state.shard_request_I),
        )
        state = state.replace(
            shard_request_I=shard_request_I,
            shard_step_I=jnp.where(shard_free_I, 0, state.shard_step_I),
            shard_next_request=state.shard_next_request
            + jnp.sum(shard_take_I, axis=1, dtype=jnp.int32),
        )

        def copy_prompts(cache: KVCache, logits_IV: jax.Array) -> tuple[KVCache, jax.Array]:
            take_I = shard_take_I.reshape(rows)
            prompt_I = per_shard_take(
                shard_prompt_of_B, jnp.minimum(shard_request_I, per_shard - 1)
            )
            prompt_I = prompt_I.reshape(rows)

            # Only the taken slots' prompt regions are written (a scatter whose other updates
            # are dropped), so the cache is updated in place rather than rebuilt.
            shard_target_I = jnp.where(shard_take_I, jnp.arange(slots), slots)
            shard_prompt_I = prompt_I.reshape(shards, slots)

            def refill(slot_cache_IKSE, prompt_cache_PKLE):
                shard_slot_cache_IKSE = slot_cache_IKSE.reshape(
                    shards, slots, *slot_cache_IKSE.shape[1:]
                )
                written = jax.vmap(
                    lambda cache_IKSE, target_I, prompt_I: cache_IKSE.at[
                        target_I, :, :prompt_len
                    ].set(prompt_cache_PKLE[prompt_I], mode="drop")
                )(shard_slot_cache_IKSE, shard_target_I, shard_prompt_I)
                return written.reshape(slot_cache_IKSE.shape)

            cache = cache.replace(
                keys=tuple(map(refill, cache.keys, prompt_cache.keys)),
                values=tuple(map(refill, cache.values, prompt_cache.values)),
                start_B=jnp.where(take_I, start_P[prompt_I], cache.start_B),
            )
            logits_IV = jnp.where(take_I[:, None], prompt_logits_PV[prompt_I], logits_IV)
            return constrain(cache, True), logits_IV

        cache, logits_IV = jax.lax.cond(
            jnp.any(shard_take_I),
            copy_prompts,
            lambda cache, logits_IV: (cache, logits_IV),
            state.cache,
            state.next_logits_IV,
        )
        length_I = prompt_len + state.shard_step_I.reshape(rows)
        return state.replace(cache=cache.replace(length=length_I), next_logits_IV=logits_IV)

    def busy(state: SlotState) -> jax.Array:
        return jnp.any(state.shard_request_I < per_shard)

    def step(state: SlotState) -> SlotState:
        shard_active_I = state.shard_request_I < per_shard
        shard_request_I = jnp.where(
            shard_active_I, state.shard_request_I, per_shard
        )  # idle: writes dropped
        row_id_I = per_shard_take(
            shard_row_ids_B, jnp.minimum(shard_request_I, per_shard - 1)
        ).reshape(rows)
        step_I = state.shard_step_I.reshape(rows)
        keys_I = jax.vmap(lambda row, i: jax.random.fold_in(jax.random.fold_in(base_key, row), i))(
            row_id_I, step_I
        )
        token_I, logprob_I = loop.method.sample(state.next_logits_IV, keys_I)
        model_logp_IV = jax.nn.log_softmax(state.next_logits_IV, axis=-1)
        model_logprob_I = jnp.take_along_axis(model_logp_IV, token_I[:, None], axis=-1)[:, 0]
        shard_token_I = jnp.where(shard_active_I, token_I.reshape(shards, slots), loop.pad_id)

        def record(shard_out_BO, shard_values_I):
            return jax.vmap(lambda out_BO, r, i, v: out_BO.at[r, i].set(v, mode="drop"))(
                shard_out_BO, shard_request_I, state.shard_step_I, shard_values_I
            )

        shard_tokens_BO = record(state.shard_tokens_BO, shard_token_I)
        shard_stopped_I = is_stop_token(shard_token_I, loop.stop_tokens)
        if loop.stop_sequences:
            shard_history_IO = per_shard_take(
                shard_tokens_BO, jnp.minimum(shard_request_I, per_shard - 1)
            )
            stopped_I = ends_with_stop_sequence(
                shard_history_IO.reshape(rows, budget), step_I, loop.stop_sequences
            )
            shard_stopped_I = shard_stopped_I | stopped_I.reshape(shards, slots)
        shard_done_I = shard_active_I & (shard_stopped_I | (state.shard_step_I + 1 >= budget))
        hidden_I1D, cache = model.decode_hidden(shard_token_I.reshape(rows, 1), state.cache)

        def set_rows(shard_out_B, shard_values_I):
            return jax.vmap(lambda out_B, r, v: out_B.at[r].set(v, mode="drop"))(
                shard_out_B, shard_request_I, shard_values_I
            )

        state = state.replace(
            shard_step_I=state.shard_step_I + 1,
            next_logits_IV=model.logits(hidden_I1D[:, 0]).astype(jnp.float32),
            cache=constrain(cache, True),
            shard_tokens_BO=shard_tokens_BO,
            shard_logprobs_BO=record(state.shard_logprobs_BO, logprob_I.reshape(shards, slots)),
            shard_model_logprobs_BO=record(
                state.shard_model_logprobs_BO, model_logprob_I.reshape(shards, slots)
            ),
            shard_lengths_B=set_rows(state.shard_lengths_B, state.shard_step_I + 1),
            shard_finished_B=set_rows(state.shard_finished_B, shard_stopped_I),
        )
        return start_requests(state, shard_done_I | ~shard_active_I)

    state = start_requests(state, jnp.ones((shards, slots), bool))
    state = jax.lax.while_loop(busy, step, state)
    total = shards * per_shard
    return SampleArrays(
        tokens_BO=state.shard_tokens_BO.reshape(total, budget),
        logprobs_BO=state.shard_logprobs_BO.reshape(total, budget),
        model_logprobs_BO=state.shard_model_logprobs_BO.reshape(total, budget),
        lengths_B=state.shard_lengths_B.reshape(total),
        finished_B=state.shard_finished_B.reshape(total),
    )


_compiled = JitCache()


def compiled_slot_sampler(
    graphdef: nnx.GraphDef,
    params: nnx.State,
    settings: SlotSettings,
    mesh: Mesh | None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
):
    """The jitted ``(params, prompt_PL, start_P, shard_prompt_of_B, shard_row_ids_B, shard_requests, seed) ->
    SampleArrays`` for this model structure and settings (cached like `loop.compiled_sampler`)."""

    def build():
        fn = functools.partial(slot_sample_arrays, graphdef, settings, mesh, rules)
        return jit_sampler(fn, params, mesh, rules, row_input_dims=(2, 1, 2, 2, 1))

    return _compiled.get((graphdef, settings, mesh, rules), build)

