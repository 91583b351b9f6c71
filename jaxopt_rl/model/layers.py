"""The decoder's building blocks: RMSNorm, RoPE, grouped-query attention over an optional KV
cache, the SwiGLU MLP, and one pre-norm decoder layer.

Dimension letters: B batch, T query tokens, S key/value slots (T without a cache, the cache
length with one), D model width, N query heads, K key/value heads, G = N / K query heads per
key/value head, H head width, F MLP width, R = H / 2 rotary frequencies.

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

from jaxopt_rl.model.config import ModelConfig, RopeScaling

_MASKED = -1e30  # finite, so a fully masked (padding) query row yields a uniform softmax, not NaN


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
    """The RoPE inverse frequencies `inv_freq_R` (float32), with optional Llama 3 scaling.

    Llama 3 scaling leaves wavelengths shorter than ``original / high_freq_factor`` untouched,
    divides those longer than ``original / low_freq_factor`` by ``factor``, and interpolates
    linearly in ``original / wavelength`` between the two bands.
    """
    exponent_R = np.arange(0, head_dim, 2, dtype=np.float32) / np.float32(head_dim)
    inv_freq_R = (np.float32(1.0) / np.float32(theta) ** exponent_R).astype(np.float32)
    if scaling is None:
        return _read_only(inv_freq_R)
    original = np.float32(scaling.original_max_position_embeddings)
    wavelength_R = np.float32(2 * math.pi) / inv_freq_R
    low_band_R = wavelength_R > original / np.float32(scaling.low_freq_factor)
    high_band_R = wavelength_R < original / np.float32(scaling.high_freq_factor)
    scaled_R = np.where(low_band_R, inv_freq_R / np.float32(scaling.factor), inv_freq_R)
    smooth_R = (original / wavelength_R - np.float32(scaling.low_freq_factor)) / np.float32(
        scaling.high_freq_factor - scaling.low_freq_factor
    )
    interpolated_R = (1 - smooth_R) * scaled_R / np.float32(scaling.factor) + smooth_R * scaled_R
    middle_R = ~low_band_R & ~high_band_R
    return _read_only(np.where(middle_R, interpolated_R, scaled_R).astype(np.float32))


def _read_only(array: np.ndarray) -> np.ndarray:
    array.setflags(write=False)  # the result is cached and shared
    return array


def apply_rope(x_BTNH: jax.Array, positions_BT: jax.Array, inv_freq_R: jax.Array) -> jax.Array:
    """Rotate each head of `x` by its token position ("rotate half": pairs are (i, i + H/2))."""
    angles_BTR = positions_BT[..., None].astype(jnp.float32) * inv_freq_R
    cos_BT1R = jnp.cos(angles_BTR)[:, :, None, :]
    sin_BT1R = jnp.sin(angles_BTR)[:, :, None, :]
    x32_BTNH = x_BTNH.astype(jnp.float32)
    first_BTNR, second_BTNR = jnp.split(x32_BTNH, 2, axis=-1)
    rotated_BTNH = jnp.concatenate(
        [
            first_BTNR * cos_BT1R - second_BTNR * sin_BT1R,
            second_BTNR * cos_BT1R + first_BTNR * sin_BT1R,
        ],
        axis=-1,
    )
    return rotated_BTNH.astype(x_BTNH.dtype)


def attend(
    q_BTNH: jax.Array, k_BKSH: jax.Array, v_BKSH: jax.Array, mask_BTS: jax.Array
) -> jax.Array:
    """Grouped-query scaled dot-product attention; `mask_BTS` is True where a query may look.

    Keys and values are laid out `[B, K, S, H]` (the KV cache's layout), so that both products
    contract them in place: a decode step then reads the cache once instead of transposing it.
    """
    batch, tokens, num_heads, head_dim = q_BTNH.shape
    num_kv_heads = k_BKSH.shape[1]
    # Written so that XLA's CPU dot emitter takes its fast path: the cache is contracted in its
    # stored layout and the value product's result keeps (b, k) leading (producing it directly in
    # (b, t, ...) order was ~10x slower in a decode step).
    q_BTKGH = q_BTNH.reshape(batch, tokens, num_kv_heads, -1, head_dim)
    scores_BKGTS = jnp.einsum(
        "btkgh,bksh->bkgts", q_BTKGH, k_BKSH, preferred_element_type=jnp.float32
    )
    scores_BKGTS = scores_BKGTS * (head_dim**-0.5)
    scores_BKGTS = jnp.where(mask_BTS[:, None, None, :, :], scores_BKGTS, _MASKED)
    weights_BKGTS = jax.nn.softmax(scores_BKGTS, axis=-1).astype(v_BKSH.dtype)
    out_BKGTH = jnp.einsum("bkgts,bksh->bkgth", weights_BKGTS, v_BKSH)
    out_BTKGH = out_BKGTH.transpose(0, 3, 1, 2, 4)
    return out_BTKGH.reshape(batch, tokens, num_heads, head_dim)


class LayerKV(NamedTuple):
    """One layer's slice of the KV cache: keys (after RoPE) and values, `[B, K, S, H]`."""

    key_BKSH: jax.Array
    value_BKSH: jax.Array


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

    def __call__(
        self,
        x_BTD: jax.Array,
        positions_BT: jax.Array,
        mask_BTS: jax.Array,
        kv: LayerKV | None = None,
        write_index: jax.Array | int = 0,
    ) -> tuple[jax.Array, LayerKV | None]:
        """Attend from `x` to itself (no `kv`) or to the cache after writing `x`'s keys and values
        at slots ``[write_index, write_index + T)`` (with `kv`); returns output and cache."""
        batch, tokens, _ = x_BTD.shape
        q_BTNH = self.q_proj(x_BTD).reshape(batch, tokens, self.num_heads, self.head_dim)
        k_BTKH = self.k_proj(x_BTD).reshape(batch, tokens, self.num_kv_heads, self.head_dim)
        v_BTKH = self.v_proj(x_BTD).reshape(batch, tokens, self.num_kv_heads, self.head_dim)
        if self.q_norm is not None:
            q_BTNH, k_BTKH = self.q_norm(q_BTNH), self.k_norm(k_BTKH)
        inv_freq_R = jnp.asarray(rope_inverse_frequencies(*self.rope))
        q_BTNH = apply_rope(q_BTNH, positions_BT, inv_freq_R)
        k_BTKH = apply_rope(k_BTKH, positions_BT, inv_freq_R)
        k_BKTH, v_BKTH = k_BTKH.transpose(0, 2, 1, 3), v_BTKH.transpose(0, 2, 1, 3)
        if kv is None:
            k_BKSH, v_BKSH = k_BKTH, v_BKTH
        else:
            start = (0, 0, write_index, 0)
            k_BKSH = jax.lax.dynamic_update_slice(
                kv.key_BKSH, k_BKTH.astype(kv.key_BKSH.dtype), start
            )
            v_BKSH = jax.lax.dynamic_update_slice(
                kv.value_BKSH, v_BKTH.astype(kv.value_BKSH.dtype), start
            )
            kv = LayerKV(k_BKSH, v_BKSH)
        out_BTNH = attend(q_BTNH, k_BKSH, v_BKSH, mask_BTS)
        return self.o_proj(out_BTNH.reshape(batch, tokens, -1)), kv


class MLP(nnx.Module):
    """SwiGLU: ``down(silu(gate(x)) * up(x))``."""

    def __init__(self, config: ModelConfig, *, rngs: nnx.Rngs):
        linear = _linear_factory(config, rngs)
        d, f, bias = config.hidden_size, config.intermediate_size, bool(config.mlp_bias)
        self.gate_proj = linear(d, f, bias)
        self.up_proj = linear(d, f, bias)
        self.down_proj = linear(f, d, bias)

    def __call__(self, x_BTD: jax.Array) -> jax.Array:
        return self.down_proj(jax.nn.silu(self.gate_proj(x_BTD)) * self.up_proj(x_BTD))


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
        x_BTD: jax.Array,
        positions_BT: jax.Array,
        mask_BTS: jax.Array,
        kv: LayerKV | None = None,
        write_index: jax.Array | int = 0,
    ) -> tuple[jax.Array, LayerKV | None]:
        attn_BTD, kv = self.self_attn(
            self.input_layernorm(x_BTD), positions_BT, mask_BTS, kv, write_index
        )
        x_BTD = x_BTD + attn_BTD
        x_BTD = x_BTD + self.mlp(self.post_attention_layernorm(x_BTD))
        return x_BTD, kv


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
