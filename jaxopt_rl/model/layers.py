"""The decoder's building blocks: RMSNorm, RoPE, grouped-query attention over packed rows or a
KV cache (the kernels live in `attention.py`), the SwiGLU MLP, and one pre-norm decoder layer.

Dimension letters (the project table, `jaxopt_rl.dimensions`): B batch rows, L query tokens,
S key/value slots (L without a cache, the cache length with one), D model width, Q query heads,
K key/value heads, J = Q / K query heads per key/value head, E head width, F MLP width,
W = E / 2 rotary frequencies.

Parameter names mirror the Hugging Face modules (``q_proj``, ``input_layernorm``...) so that the
checkpoint mapping in `checkpoint.py` is a rename plus a transpose. Numerics follow the
`transformers` reference: RMSNorm normalises in float32 and casts back before the scale, the
attention softmax runs in float32, RoPE uses the "rotate half" layout.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxopt_rl.model.attention import attend, self_attention
from jaxopt_rl.model.config import ModelConfig, RopeScaling

__all__ = ["attend"]  # re-exported: the dense kernel's historical home


def _dtype(name: str) -> jnp.dtype:
    return jnp.dtype(name)


def _normal_init(config: ModelConfig) -> nnx.Initializer:
    return jax.nn.initializers.normal(stddev=config.initializer_range)


class RMSNorm(nnx.Module):
    """Root-mean-square norm over the last axis with a learned scale (no bias, no centring)."""

    def __init__(self, dim: int, eps: float, *, param_dtype: str, compute_dtype: str):
        self.eps = eps
        self.compute_dtype = compute_dtype
        self.scale = nnx.Param(jnp.ones((dim,), _dtype(param_dtype)))

    def __call__(self, x: jax.Array) -> jax.Array:
        x32 = x.astype(jnp.float32)
        normed = x32 * jax.lax.rsqrt(jnp.mean(x32 * x32, axis=-1, keepdims=True) + self.eps)
        dtype = _dtype(self.compute_dtype)
        return self.scale[...].astype(dtype) * normed.astype(dtype)


@functools.lru_cache(maxsize=32)
def rope_inverse_frequencies(
    head_dim: int, theta: float, scaling: RopeScaling | None
) -> np.ndarray:
    """The RoPE inverse frequencies `inv_freq_W` (float32), with optional Llama 3 scaling.

    Llama 3 scaling leaves wavelengths shorter than ``original / high_freq_factor`` untouched,
    divides those longer than ``original / low_freq_factor`` by ``factor``, and interpolates
    linearly in ``original / wavelength`` between the two bands.
    """
    exponent_W = np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    inv_freq_W = (np.float32(1.0) / np.float32(theta) ** exponent_W).astype(np.float32)
    if scaling is None:
        return _read_only(inv_freq_W)
    original = np.float32(scaling.original_max_position_embeddings)
    wavelength_W = np.float32(2 * math.pi) / inv_freq_W
    low_band_W = wavelength_W > original / np.float32(scaling.low_freq_factor)
    high_band_W = wavelength_W < original / np.float32(scaling.high_freq_factor)
    scaled_W = np.where(low_band_W, inv_freq_W / np.float32(scaling.factor), inv_freq_W)
    smooth_W = (original / wavelength_W - np.float32(scaling.low_freq_factor)) / np.float32(
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    interpolated_W = (1 - smooth_W) * scaled_W / np.float32(scaling.factor) + smooth_W * scaled_W
    middle_W = ~low_band_W & ~high_band_W
    return _read_only(np.where(middle_W, interpolated_W, scaled_W).astype(np.float32))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # the result is cached and shared
    return array


def apply_rope(x_BLQE: jax.Array, positions_BL: jax.Array, inv_freq_W: jax.Array) -> jax.Array:
    """Rotate each head of `x` by its token position ("rotate half": pairs are (i, i + E/2))."""
    angles_BLW = positions_BL[..., None].astype(jnp.float32) * inv_freq_W
    cos_BL1W = jnp.cos(angles_BLW)[:, :, None, :]
    sin_BL1W = jnp.sin(angles_BLW)[:, :, None, :]
    x32_BLQE = x_BLQE.astype(jnp.float32)
    first_BLQW, second_BLQW = jnp.split(x32_BLQE, 2, axis=-1)
    rotated_BLQE = jnp.concatenate(
        [
            first_BLQW * cos_BL1W - second_BLQW * sin_BL1W,
            second_BLQW * cos_BL1W + first_BLQW * sin_BL1W,
        ],
        axis=-1,
    )
    return rotated_BLQE.astype(x_BLQE.dtype)


def write_slots(cache_BKSE: jax.Array, new_BKLE: jax.Array, write_index: jax.Array | int) -> jax.Array:
    """`cache` with `new` written at slots ``[write_index, write_index + L)``: the same slots in
    every row (a scalar index: one contiguous update) or each row at its own (``[B]``)."""
    new_BKLE = new_BKLE.astype(cache_BKSE.dtype)
    if jnp.ndim(write_index) == 0:
        return jax.lax.dynamic_update_slice(cache_BKSE, new_BKLE, (0, 0, write_index, 0))
    return jax.vmap(lambda row_KSE, new_KLE, index: jax.lax.dynamic_update_slice(
        row_KSE, new_KLE, (0, index, 0)))(cache_BKSE, new_BKLE, write_index)


class LayerKV(NamedTuple):
    """One layer's slice of the KV cache: keys (after RoPE) and values, `[B, K, S, E]`."""

    key_BKSE: jax.Array
    value_BKSE: jax.Array


class Attention(nnx.Module):
    """Grouped-query self-attention with RoPE (and Qwen3's per-head q/k RMSNorm)."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        d, h = config.hidden_size, config.head_dim
        self.num_heads, self.num_kv_heads, self.head_dim = config.num_heads, config.num_kv_heads, h
        linear = _linear_factory(config, rngs)
        self.q_proj = linear(d, config.num_heads * h, bool(config.qkv_bias))
        self.k_proj = linear(d, config.num_kv_heads * h, bool(config.qkv_bias))
        self.v_proj = linear(d, config.num_kv_heads * h, bool(config.qkv_bias))
        self.o_proj = linear(config.num_heads * h, d, bool(config.out_bias))
        if config.qk_norm:
            norm_args = dict(param_dtype=config.param_dtype, compute_dtype=config.compute_dtype)
            self.q_norm = RMSNorm(h, config.rms_norm_eps, **norm_args)
            self.k_norm = RMSNorm(h, config.rms_norm_eps, **norm_args)
        else:
            self.q_norm = self.k_norm = None
        self.rope = (h, config.rope_theta, config.rope_scaling)  # static: a constant under jit
        # static: which kernel a full forward pass uses (`attention.self_attention`)
        self.kernel = (config.attention, config.attention_block, config.platform)

    def __call__(
        self,
        x_BLD: jax.Array,
        positions_BL: jax.Array,
        mask_BLS: jax.Array | None = None,
        kv: LayerKV | None = None,
        write_index: jax.Array | int = 0,
        segment_ids_BL: jax.Array | None = None,
    ) -> tuple[jax.Array, LayerKV | None]:
        """Attend from `x` to itself (no `kv`: packed rows, `segment_ids_BL`, through the
        model's kernel) or to the cache after writing `x`'s keys and values at slots
        ``[write_index, write_index + L)`` (with `kv` and `mask_BLS`; `write_index` is one slot
        for every row, or ``[B]``, one per row); returns output and cache."""
        batch, tokens, _ = x_BLD.shape
        q_BLQE = self.q_proj(x_BLD).reshape(batch, tokens, self.num_heads, self.head_dim)
        k_BLKE = self.k_proj(x_BLD).reshape(batch, tokens, self.num_kv_heads, self.head_dim)
        v_BLKE = self.v_proj(x_BLD).reshape(batch, tokens, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q_BLQE, k_BLKE = self.q_norm(q_BLQE), self.k_norm(k_BLKE)
        inv_freq_W = jnp.asarray(rope_inverse_frequencies(*self.rope))
        q_BLQE = apply_rope(q_BLQE, positions_BL, inv_freq_W)
        k_BLKE = apply_rope(k_BLKE, positions_BL, inv_freq_W)
        k_BKLE, v_BKLE = k_BLKE.transpose(0, 2, 1, 3), v_BLKE.transpose(0, 2, 1, 3)
        if kv is None:
            kernel, block, platform = self.kernel
            out_BLQE = self_attention(
                q_BLQE, k_BKLE, v_BKLE, segment_ids_BL, kernel=kernel, block=block,
                platform=platform,
            )
        else:
            k_BKSE = write_slots(kv.key_BKSE, k_BKLE, write_index)
            v_BKSE = write_slots(kv.value_BKSE, v_BKLE, write_index)
            kv = LayerKV(k_BKSE, v_BKSE)
            out_BLQE = attend(q_BLQE, k_BKSE, v_BKSE, mask_BLS)
        return self.o_proj(out_BLQE.reshape(batch, tokens, -1)), kv


class MLP(nnx.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        linear = _linear_factory(config, rngs)
        d, f, bias = config.hidden_size, config.intermediate_size, bool(config.mlp_bias)
        self.gate_proj = linear(d, f, bias)
        self.up_proj = linear(d, f, bias)
        self.down_proj = linear(f, d, bias)

    def __call__(self, x_BLD: jax.Array) -> jax.Array:
        return self.down_proj(jax.nn.silu(self.gate_proj(x_BLD)) * self.up_proj(x_BLD))


class DecoderLayer(nnx.Module):
    """Pre-norm residual block: ``x + attn(norm(x))`` then ``x + mlp(norm(x))``."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        norm_args = dict(param_dtype=config.param_dtype, compute_dtype=config.compute_dtype)
        self.input_layernorm = RMSNorm(config.hidden_size, config.rms_norm_eps, **norm_args)
        self.self_attn = Attention(config, rngs=rngs)
        self.post_attention_layernorm = RMSNorm(
            config.hidden_size, config.rms_norm_eps, **norm_args
        )
        self.mlp = MLP(config, rngs=rngs)

    def __call__(
        self,
        x_BLD: jax.Array,
        positions_BL: jax.Array,
        mask_BLS: jax.Array | None = None,
        kv: LayerKV | None = None,
        write_index: jax.Array | int = 0,
        segment_ids_BL: jax.Array | None = None,
    ) -> tuple[jax.Array, LayerKV | None]:
        attn_BLD, kv = self.self_attn(
            self.input_layernorm(x_BLD), positions_BL, mask_BLS, kv, write_index, segment_ids_BL
        )
        x_BLD = x_BLD + attn_BLD
        x_BLD = x_BLD + self.mlp(self.post_attention_layernorm(x_BLD))
        return x_BLD, kv


def _linear_factory(config: ModelConfig, rngs: nnx.Rngs):
    def linear(in_features: int, out_features: int, use_bias: bool) -> nnx.Linear:
        return nnx.Linear(
            in_features,
            out_features,
            use_bias=use_bias,
            dtype=_dtype(config.compute_dtype),
            param_dtype=_dtype(config.param_dtype),
            kernel_init=_normal_init(config),
            rngs=rngs,
        )

    return linear
