"""`SamplingState`: everything the static and compact decode loops carry from one token to the
next, and the pure per-step helpers (stop token, stop sequence) that every scheme uses. The slot
sampler carries its own `slots.SlotState`, whose result arrays follow the same conventions.

Dimension letters (`jaxopt_rl.dimensions`): B batch rows, O new-token budget
(``max_new_tokens``), V vocabulary, Z length of a stop sequence.

Conventions (what the arrays hold once the loop ends): ``tokens_BO[b, :lengths_B[b]]`` are row
``b``'s generated tokens, *including* the EOS token or stop sequence that ended it (the trainer
needs their log-probs to learn to stop); every later entry is the pad id with log-probs 0.
``logprobs_BO`` is the log-probability of each token under the sampling distribution it was drawn
from (temperature / top-k / top-p applied; 0 for greedy); ``model_logprobs_BO`` is the raw
model's ``log_softmax(logits)`` at temperature 1 with no truncation, the ``logp_old`` of GRPO.
``finished_B`` is True for rows that stopped on EOS or a stop sequence, False for rows cut at O.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
from flax import struct

from jaxopt_rl.model.transformer import KVCache


@struct.dataclass
class SamplingState:
    step: jax.Array  # int32 []: index in tokens_BO of the token drawn next
    tokens_BO: jax.Array  # int32
    logprobs_BO: jax.Array  # float32, under the sampling distribution
    model_logprobs_BO: jax.Array  # float32, raw model at temperature 1
    lengths_B: jax.Array  # int32: tokens generated so far
    finished_B: jax.Array  # bool: stopped on EOS or a stop sequence
    next_logits_BV: jax.Array  # float32: logits for the token at `step`
    row_keys_B: jax.Array  # one PRNG key per row; step `i` uses fold_in(key, i)
    cache: KVCache


def ends_with_stop_sequence(
    tokens_BO: jax.Array, step: jax.Array, stop_sequences: tuple[tuple[int, ...], ...]
) -> jax.Array:
    """`[B]` bool: does the generated text end, at index `step` (one index for every row, or
    ``[B]``, one per row), with one of `stop_sequences`?

    Only generated tokens are matched (a stop sequence never straddles the prompt)."""
    batch, budget = tokens_BO.shape
    step_B1 = jnp.broadcast_to(step, (batch,))[:, None]
    hit_B = jnp.zeros((batch,), bool)
    for sequence in stop_sequences:
        length = len(sequence)
        index_BZ = jnp.clip(step_B1 - length + 1 + jnp.arange(length), 0, budget - 1)
        window_BZ = jnp.take_along_axis(tokens_BO, index_BZ, axis=1)
        match_B = jnp.all(window_BZ == jnp.asarray(sequence, jnp.int32), axis=1)
        hit_B = hit_B | (match_B & (step_B1[:, 0] + 1 >= length))
    return hit_B


def is_stop_token(tokens_B: jax.Array, stop_tokens: tuple[int, ...]) -> jax.Array:
    if not stop_tokens:
        return jnp.zeros(tokens_B.shape, bool)
    return jnp.isin(tokens_B, jnp.asarray(stop_tokens, jnp.int32))
