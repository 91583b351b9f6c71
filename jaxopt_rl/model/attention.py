"""Attention kernels: the exact dense product over a mask (`attend`, the reference every other
form is tested against, and the sampler's kernel), and `self_attention`, the one entry point of
full forward passes over packed rows, which dispatches to the kernel the model config names.

Dimension letters (`jaxopt_rl.dimensions`): B batch rows, L query tokens, S key/value slots
(S = L in self-attention), Q query heads, K key/value heads, J = Q / K, E head width.

Packed rows. A row of the trainer holds several trajectories: ``segment_ids_BL`` numbers them
1, 2, ... and 0 is padding. A token attends to the tokens at or before it (by index in the row)
of its own segment; keys of segment 0 are never read. Three kernels compute that:

* ``dense``: the mask as a ``[B, L, S]`` array and `attend` (today's exact form; the fastest for
  short rows, and what the CPU runs). Memory grows with L², so it cannot hold 32k-token rows.
* ``blockwise``: `jaxopt_rl.model.blockwise`, an online-softmax form with its own backward pass
  that never holds more than a block of scores (portable: GPU and CPU).
* ``splash``: Pallas' splash attention for TPU (`jax.experimental.pallas.ops.tpu`), run per
  device under `jax.shard_map` over the batch (and head) axes of the partition rules' layout;
  on a CPU it runs in Pallas' interpreter (the equality tests).

Padding rows (segment 0) differ and carry no loss: `attend` averages every value there, the
blockwise kernel returns zeros, splash attends among the padding tokens. Real rows agree.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxopt_rl.model import partitioning
from jaxopt_rl.model.blockwise import blockwise_attention

_MASKED = -1e30  # finite, so a fully masked (padding) query row yields a uniform softmax, not NaN


def attend(
    q_BLQE: jax.Array, k_BKSE: jax.Array, v_BKSE: jax.Array, mask_BLS: jax.Array
) -> jax.Array:
    """Grouped-query scaled dot-product attention; `mask_BLS` is True where a query may look.

    Keys and values are laid out `[B, K, S, E]` (the KV cache's layout), so that both products
    contract them in place: a decode step then reads the cache once instead of transposing it.
    """
    batch, tokens, num_heads, head_dim = q_BLQE.shape
    num_kv_heads = k_BKSE.shape[1]
    q_BLKJE = q_BLQE.reshape(batch, tokens, num_kv_heads, -1, head_dim)
    if tokens == 1:
        # One query per row (a decode step): XLA:CPU runs the grouped product as a J-column
        # matrix product per cache head, compute-bound at small J, while one matrix-vector
        # product per query head streams the cache (attention 1.4-1.9x faster at J = 2 and
        # 192-640 slots, no slower at J = 4 and 7); other backends keep the grouped product.
        scores_BKJLS = jax.lax.platform_dependent(
            q_BLKJE, k_BKSE, cpu=_scores_per_query_head, default=_grouped_scores
        )
    else:
        scores_BKJLS = _grouped_scores(q_BLKJE, k_BKSE)
    scores_BKJLS = scores_BKJLS * (head_dim**-0.5)
    scores_BKJLS = jnp.where(mask_BLS[:, None, None, :, :], scores_BKJLS, _MASKED)
    weights_BKJLS = jax.nn.softmax(scores_BKJLS, axis=-1).astype(v_BKSE.dtype)
    # the value product's result keeps (b, k) leading: producing it directly in (b, t, ...)
    # order was ~10x slower in a decode step on XLA:CPU
    out_BKJLE = jnp.einsum("bkjls,bkse->bkjle", weights_BKJLS, v_BKSE)
    out_BLKJE = out_BKJLE.transpose(0, 3, 1, 2, 4)
    return out_BLKJE.reshape(batch, tokens, num_heads, head_dim)


def _grouped_scores(q_BLKJE: jax.Array, k_BKSE: jax.Array) -> jax.Array:
    """Attention logits `[B, K, J, L, S]` (float32) as one product per key/value head; the cache
    is contracted in its stored layout, so a decode step reads it once, untransposed."""
    return jnp.einsum("blkje,bkse->bkjls", q_BLKJE, k_BKSE, preferred_element_type=jnp.float32)


def _scores_per_query_head(q_BLKJE: jax.Array, k_BKSE: jax.Array) -> jax.Array:
    """`_grouped_scores` as one product per query head of each group (J of them)."""
    per_head = [
        jnp.einsum("blke,bkse->bkls", q_BLKJE[:, :, :, j], k_BKSE, preferred_element_type=jnp.float32)
        for j in range(q_BLKJE.shape[3])
    ]
    return jnp.stack(per_head, axis=2)


def causal_segment_mask(segment_ids_BL: jax.Array) -> jax.Array:
    """`mask_BLS` of packed rows: causal by index, within a segment, never a padding key."""
    index_L = jnp.arange(segment_ids_BL.shape[1])
    causal_LS = index_L[:, None] >= index_L[None, :]
    same_BLS = segment_ids_BL[:, :, None] == segment_ids_BL[:, None, :]
    return causal_LS[None] & same_BLS & (segment_ids_BL[:, None, :] != 0)


def self_attention(
    q_BLQE: jax.Array,
    k_BKSE: jax.Array,
    v_BKSE: jax.Array,
    segment_ids_BL: jax.Array,
    *,
    kernel: str,
    block: int,
    platform: str | None = None,
) -> jax.Array:
    """Attention of packed rows over themselves with the named kernel (module docstring)."""
    if kernel == "dense":
        return attend(q_BLQE, k_BKSE, v_BKSE, causal_segment_mask(segment_ids_BL))
    if kernel == "blockwise":
        return blockwise_attention(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, block_size=block)
    if kernel == "splash":
        return splash_attention(
            q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, block=block, interpret=platform == "cpu"
        )
    raise ValueError(f"attention kernel {kernel!r} is not one of dense, blockwise, splash")


def splash_attention(
    q_BLQE: jax.Array,
    k_BKSE: jax.Array,
    v_BKSE: jax.Array,
    segment_ids_BL: jax.Array,
    *,
    block: int,
    interpret: bool = False,
) -> jax.Array:
    """Pallas splash attention (causal, segment ids, grouped heads as J-head MQA kernels per
    key/value head). A Pallas call cannot be split by XLA's partitioner, so under a layout
    (`partitioning.layout`) it runs per device in `jax.shard_map`: rows over the batch axes,
    heads over the head axes of the rules (query and key/value heads split alike)."""
    current = partitioning.current_layout()
    run = functools.partial(_splash_local, block=block, interpret=interpret)
    if current is None:
        return run(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL)
    mesh, _ = current
    q_spec = partitioning.activation_spec(q_BLQE.shape, ("batch", None, "heads", None))
    kv_spec = partitioning.activation_spec(k_BKSE.shape, ("batch", "kv_heads", None, None))
    if (q_spec[2] is None) != (kv_spec[1] is None):
        # one side split, the other whole: the J query heads of a group would straddle devices
        q_spec = partitioning.activation_spec(q_BLQE.shape, ("batch", None, None, None))
        kv_spec = partitioning.activation_spec(k_BKSE.shape, ("batch", None, None, None))
    segment_spec = partitioning.activation_spec(segment_ids_BL.shape, ("batch", None))
    return jax.shard_map(
        run,
        mesh=mesh,
        in_specs=(q_spec, kv_spec, kv_spec, segment_spec),
        out_specs=q_spec,
        check_vma=False,
    )(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL)


def _splash_local(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, *, block: int, interpret: bool):
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_kernel as splash,
    )
    from jax.experimental.pallas.ops.tpu.splash_attention import (
        splash_attention_mask as masks,
    )

    batch, tokens, num_heads, head_dim = q_BLQE.shape
    num_kv_heads = k_BKSE.shape[1]
    group = num_heads // num_kv_heads
    size = min(block, tokens)
    if tokens % size:
        raise ValueError(f"splash attention: row length {tokens} is not a multiple of its block "
                         f"{size}; use model.attention_block dividing the horizon")
    sizes = splash.BlockSizes(
        block_q=size, block_kv=size, block_kv_compute=size,
        block_q_dkv=size, block_kv_dkv=size, block_kv_dkv_compute=size,
        block_q_dq=size, block_kv_dq=size,
    )
    mask = masks.MultiHeadMask([masks.CausalMask((tokens, tokens))] * group)
    kernel = splash.make_splash_mqa(
        mask, block_sizes=sizes, head_shards=1, q_seq_shards=1, interpret=interpret
    )
    # splash takes unscaled logits and one query group [J, L, E] against one key head [S, E]
    q_BKJLE = (q_BLQE * head_dim**-0.5).astype(q_BLQE.dtype)
    q_BKJLE = q_BKJLE.reshape(batch, tokens, num_kv_heads, group, head_dim)
    q_BKJLE = q_BKJLE.transpose(0, 2, 3, 1, 4)

    def one_row(q_KJLE, k_KSE, v_KSE, segment_ids_L):
        ids = splash.SegmentIds(q=segment_ids_L, kv=segment_ids_L)
        return jax.vmap(lambda q_JLE, k_SE, v_SE: kernel(q_JLE, k_SE, v_SE, ids))(
            q_KJLE, k_KSE, v_KSE
        )

    out_BKJLE = jax.vmap(one_row)(q_BKJLE, k_BKSE, v_BKSE, segment_ids_BL.astype(jnp.int32))
    return out_BKJLE.transpose(0, 3, 1, 2, 4).reshape(batch, tokens, num_heads, head_dim)
