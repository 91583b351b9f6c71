"""Blockwise ("flash") causal self-attention over packed rows, with a hand-written backward pass.

This module owns `blockwise_attention`, the training path's attention for long packed rows (tens
of thousands of tokens), where the `[L, S]` scores of `layers.attend` would not fit in memory.
Pure `jax.numpy` + `jax.lax` (no Pallas), so one definition compiles for CPU, GPU and TPU.

Dimension letters (`jaxopt_rl.dimensions`): B rows, L query positions (of the row or of one query
block), S key positions (of the row or of one key block; S == L here), Q query heads, K key/value
heads, J = Q / K query heads per key/value head (query head q reads key/value head q // J), E head
width.

Mask: a query sees a key at or before it (causal by index within the row) of its own segment
(packed trajectories); segment 0 is padding and is never seen.

Algorithm. The row is cut into blocks of `block_size` positions. The forward pass walks, for each
query block i, the key blocks 0..i only (later ones lie above the causal diagonal) and keeps an
online softmax in float32: a running maximum, a running sum of exponentials and a running
probability-weighted sum of values, rescaled whenever the maximum grows. It saves q, k, v, the
segment ids, the output and the per-query log-sum-exp, never probabilities. The backward pass
(FlashAttention-2) walks key blocks outermost and query blocks i >= j inside, recomputes each
block's probabilities P from the log-sum-exp, and with delta = rowsum(dO * O) and
dS = P * (dP - delta) accumulates dk, dv in the loop carry and dq in one float32 buffer.

Padding rows: a query of segment 0 sees no key. `attend` then returns the uniform average of all
values; here it returns zeros, with zero gradients, so nothing in a padding row is ever NaN or
infinite (a NaN there would poison the gradients although the loss masks the row).

Memory: O(B·L·Q·E) for inputs, output, saved residuals and the float32 dq buffer, plus
O(B·Q·block_size²) for one block's scores and probabilities, in both passes; never O(L²).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
from jax import lax

# Finite, so that masked scores never produce inf - inf; probabilities are also zeroed with an
# explicit `where`, since a row that has seen only masked keys has this value as its maximum.
_MASKED = -1e30


def blockwise_attention(
    q_BLQE: jax.Array,
    k_BKSE: jax.Array,
    v_BKSE: jax.Array,
    segment_ids_BL: jax.Array,
    *,
    block_size: int = 512,
) -> jax.Array:
    """Causal, segment-masked grouped-query attention `out_BLQE` (v's dtype), computed in blocks.

    Equals `layers.attend` under the mask `(l >= s) & (seg[l] == seg[s]) & (seg[s] != 0)` on
    every query of a nonzero segment; queries of segment 0 (padding) get zeros.
    """
    batch, tokens, num_heads, head_dim = q_BLQE.shape
    num_kv_heads = k_BKSE.shape[1]
    if block_size < 1:
        raise ValueError(f"block_size must be positive, got {block_size}")
    if k_BKSE.shape != (batch, num_kv_heads, tokens, head_dim) or v_BKSE.shape != k_BKSE.shape:
        raise ValueError(f"self-attention needs k, v of shape [B, K, L, E]: got {k_BKSE.shape}")
    if num_heads % num_kv_heads:
        raise ValueError(f"{num_heads} query heads do not split over {num_kv_heads} kv heads")
    if segment_ids_BL.shape != (batch, tokens):
        raise ValueError(f"segment ids must be [B, L] = {(batch, tokens)}: {segment_ids_BL.shape}")
    block = min(block_size, tokens)  # a block wider than the row would only add padding
    padded = -(-tokens // block) * block
    pad = padded - tokens
    q_BLKJE = q_BLQE.reshape(batch, tokens, num_kv_heads, num_heads // num_kv_heads, head_dim)
    if pad:
        # padded positions get segment 0, so they see nothing and nothing sees them
        q_BLKJE = jnp.pad(q_BLKJE, ((0, 0), (0, pad), (0, 0), (0, 0), (0, 0)))
        k_BKSE = jnp.pad(k_BKSE, ((0, 0), (0, 0), (0, pad), (0, 0)))
        v_BKSE = jnp.pad(v_BKSE, ((0, 0), (0, 0), (0, pad), (0, 0)))
        segment_ids_BL = jnp.pad(segment_ids_BL, ((0, 0), (0, pad)))
    out_BLKJE = _flash(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block)
    return out_BLKJE[:, :tokens].reshape(batch, tokens, num_heads, head_dim)


def _block_mask(segment_ids_BL: jax.Array, query_start, key_start, block: int) -> jax.Array:
    """`mask_BLS` of one (query block, key block) pair: True where the query may see the key."""
    seg_q_BL = lax.dynamic_slice_in_dim(segment_ids_BL, query_start, block, axis=1)
    seg_k_BS = lax.dynamic_slice_in_dim(segment_ids_BL, key_start, block, axis=1)
    causal_LS = (query_start + jnp.arange(block))[:, None] >= (key_start + jnp.arange(block))[None]
    same_BLS = seg_q_BL[:, :, None] == seg_k_BS[:, None, :]
    return causal_LS[None] & same_BLS & (seg_k_BS[:, None, :] != 0)


def _block_scores(q_BLKJE, k_BKSE, mask_BLS) -> jax.Array:
    """Scaled float32 scores `[B, K, J, L, S]` of one block pair, masked ones at `_MASKED`."""
    scores_BKJLS = jnp.einsum(
        "blkje,bkse->bkjls", q_BLKJE, k_BKSE, preferred_element_type=jnp.float32
    ) * (q_BLKJE.shape[-1] ** -0.5)
    return jnp.where(mask_BLS[:, None, None], scores_BKJLS, _MASKED)


def _forward(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block: int):
    """The output `[B, L, K, J, E]` (v's dtype) and the float32 log-sum-exp `[B, K, J, L]`."""
    batch, padded, num_kv_heads, group, head_dim = q_BLKJE.shape
    stats_shape = (batch, num_kv_heads, group, block)

    def query_block(i, carry):
        out_BLKJE, lse_BKJL = carry
        start = i * block
        q_blk_BLKJE = lax.dynamic_slice_in_dim(q_BLKJE, start, block, axis=1)

        def key_block(j, state):
            max_BKJL, sum_BKJL, acc_BKJLE = state
            k_blk_BKSE = lax.dynamic_slice_in_dim(k_BKSE, j * block, block, axis=2)
            v_blk_BKSE = lax.dynamic_slice_in_dim(v_BKSE, j * block, block, axis=2)
            mask_BLS = _block_mask(segment_ids_BL, start, j * block, block)
            scores_BKJLS = _block_scores(q_blk_BLKJE, k_blk_BKSE, mask_BLS)
            new_max_BKJL = jnp.maximum(max_BKJL, scores_BKJLS.max(axis=-1))
            probs_BKJLS = jnp.where(
                mask_BLS[:, None, None], jnp.exp(scores_BKJLS - new_max_BKJL[..., None]), 0.0
            )
            rescale_BKJL = jnp.exp(max_BKJL - new_max_BKJL)
            # probabilities enter the value product in v's dtype, as in `attend`
            pv_BKJLE = jnp.einsum(
                "bkjls,bkse->bkjle",
                probs_BKJLS.astype(v_BKSE.dtype),
                v_blk_BKSE,
                preferred_element_type=jnp.float32,
            )
            return (
                new_max_BKJL,
                rescale_BKJL * sum_BKJL + probs_BKJLS.sum(axis=-1),
                rescale_BKJL[..., None] * acc_BKJLE + pv_BKJLE,
            )

        init = (
            jnp.full(stats_shape, _MASKED, jnp.float32),
            jnp.zeros(stats_shape, jnp.float32),
            jnp.zeros((*stats_shape, head_dim), jnp.float32),
        )
        # key blocks after i are entirely above the causal diagonal
        max_BKJL, sum_BKJL, acc_BKJLE = lax.fori_loop(0, i + 1, key_block, init)
        # a real query always sees itself, so only padding queries have a zero sum
        seen_BKJL = sum_BKJL > 0
        safe_sum_BKJL = jnp.where(seen_BKJL, sum_BKJL, 1.0)
        out_blk_BKJLE = jnp.where(seen_BKJL[..., None], acc_BKJLE / safe_sum_BKJL[..., None], 0.0)
        lse_blk_BKJL = jnp.where(seen_BKJL, max_BKJL + jnp.log(safe_sum_BKJL), 0.0)
        out_blk_BLKJE = out_blk_BKJLE.transpose(0, 3, 1, 2, 4).astype(out_BLKJE.dtype)
        return (
            lax.dynamic_update_slice_in_dim(out_BLKJE, out_blk_BLKJE, start, axis=1),
            lax.dynamic_update_slice_in_dim(lse_BKJL, lse_blk_BKJL, start, axis=3),
        )

    init = (
        jnp.zeros(q_BLKJE.shape, v_BKSE.dtype),
        jnp.zeros((batch, num_kv_heads, group, padded), jnp.float32),
    )
    return lax.fori_loop(0, padded // block, query_block, init)


@functools.partial(jax.custom_vjp, nondiff_argnums=(4,))
def _flash(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block: int) -> jax.Array:
    return _forward(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block)[0]


def _flash_fwd(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block: int):
    out_BLKJE, lse_BKJL = _forward(q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, block)
    return out_BLKJE, (q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, out_BLKJE, lse_BKJL)


def _flash_bwd(block: int, residuals, dout_BLKJE):
    q_BLKJE, k_BKSE, v_BKSE, segment_ids_BL, out_BLKJE, lse_BKJL = residuals
    padded = q_BLKJE.shape[1]
    num_blocks = padded // block
    # delta_l = sum_s P_ls dP_ls = dO_l . O_l: one number per query, no probabilities needed
    delta_BKJL = jnp.einsum(
        "blkje,blkje->bkjl", dout_BLKJE.astype(jnp.float32), out_BLKJE.astype(jnp.float32)
    )
    scale = q_BLKJE.shape[-1] ** -0.5

    def key_block(j, carry):
        dq_BLKJE, dk_BKSE, dv_BKSE = carry
        key_start = j * block
        k_blk_BKSE = lax.dynamic_slice_in_dim(k_BKSE, key_start, block, axis=2)
        v_blk_BKSE = lax.dynamic_slice_in_dim(v_BKSE, key_start, block, axis=2)

        def query_block(i, state):
            dq_BLKJE, dk_blk_BKSE, dv_blk_BKSE = state
            start = i * block
            q_blk_BLKJE = lax.dynamic_slice_in_dim(q_BLKJE, start, block, axis=1)
            dout_blk_BLKJE = lax.dynamic_slice_in_dim(dout_BLKJE, start, block, axis=1)
            lse_blk_BKJL = lax.dynamic_slice_in_dim(lse_BKJL, start, block, axis=3)
            delta_blk_BKJL = lax.dynamic_slice_in_dim(delta_BKJL, start, block, axis=3)
            mask_BLS = _block_mask(segment_ids_BL, start, key_start, block)
            scores_BKJLS = _block_scores(q_blk_BLKJE, k_blk_BKSE, mask_BLS)
            probs_BKJLS = jnp.where(
                mask_BLS[:, None, None], jnp.exp(scores_BKJLS - lse_blk_BKJL[..., None]), 0.0
            )
            dv_blk_BKSE += jnp.einsum(
                "bkjls,blkje->bkse",
                probs_BKJLS.astype(dout_blk_BLKJE.dtype),
                dout_blk_BLKJE,
                preferred_element_type=jnp.float32,
            )
            dprobs_BKJLS = jnp.einsum(
                "blkje,bkse->bkjls", dout_blk_BLKJE, v_blk_BKSE, preferred_element_type=jnp.float32
            )
            # the softmax's Jacobian, with the 1/sqrt(E) of the scores folded in
            dscores_BKJLS = probs_BKJLS * (dprobs_BKJLS - delta_blk_BKJL[..., None]) * scale
            dscores_BKJLS = dscores_BKJLS.astype(q_BLKJE.dtype)
            dq_blk_BLKJE = jnp.einsum(
                "bkjls,bkse->blkje", dscores_BKJLS, k_blk_BKSE, preferred_element_type=jnp.float32
            )
            dq_BLKJE = lax.dynamic_update_slice_in_dim(
                dq_BLKJE,
                lax.dynamic_slice_in_dim(dq_BLKJE, start, block, axis=1) + dq_blk_BLKJE,
                start,
                axis=1,
            )
            dk_blk_BKSE += jnp.einsum(
                "bkjls,blkje->bkse", dscores_BKJLS, q_blk_BLKJE, preferred_element_type=jnp.float32
            )
            return dq_BLKJE, dk_blk_BKSE, dv_blk_BKSE

        zeros_BKSE = jnp.zeros(k_blk_BKSE.shape, jnp.float32)
        # query blocks before j lie entirely above the causal diagonal for this key block
        dq_BLKJE, dk_blk_BKSE, dv_blk_BKSE = lax.fori_loop(
            j, num_blocks, query_block, (dq_BLKJE, zeros_BKSE, zeros_BKSE)
        )
        return (
            dq_BLKJE,
            lax.dynamic_update_slice_in_dim(
                dk_BKSE, dk_blk_BKSE.astype(dk_BKSE.dtype), key_start, axis=2
            ),
            lax.dynamic_update_slice_in_dim(
                dv_BKSE, dv_blk_BKSE.astype(dv_BKSE.dtype), key_start, axis=2
            ),
        )

    init = (
        jnp.zeros(q_BLKJE.shape, jnp.float32),
        jnp.zeros(k_BKSE.shape, k_BKSE.dtype),
        jnp.zeros(v_BKSE.shape, v_BKSE.dtype),
    )
    dq_BLKJE, dk_BKSE, dv_BKSE = lax.fori_loop(0, num_blocks, key_block, init)
    # integer segment ids have no cotangent
    return dq_BLKJE.astype(q_BLKJE.dtype), dk_BKSE, dv_BKSE, None


_flash.defvjp(_flash_fwd, _flash_bwd)
