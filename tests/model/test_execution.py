"""The lean execution forms equal the plain ones (float32, CPU): the blockwise and splash
attention kernels against the dense product over the packed-row mask, and the whole model with
scanned, rematerialised layers against the unrolled stack, forward and gradients; plus the
per-backend defaults of `ModelConfig.for_platform`.

Tolerances: 1e-5 absolute on outputs of order 1 (float32 rounding of reordered sums), 1e-4
relative on gradients. Splash runs in Pallas' interpreter here, so its cases are few."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.config import ConfigError
from jaxopt_rl.model import init_model
from jaxopt_rl.model.attention import self_attention
from jaxopt_rl.model.config import EXECUTION_DEFAULTS
from jaxopt_rl.model.testing import tiny_test_config
from tests.model.test_layers import reference_attention


def packed_segments(rng: np.random.Generator, batch: int, tokens: int) -> np.ndarray:
    """Rows of consecutive segments 1, 2, ... of random lengths, some ending in padding (0)."""
    segments = np.zeros((batch, tokens), np.int32)
    for b in range(batch):
        at, segment = 0, 1
        end = tokens - int(rng.integers(0, tokens // 3 + 1))
        while at < end:
            length = int(rng.integers(1, max(2, tokens // 2)))
            segments[b, at:min(end, at + length)] = segment
            at, segment = at + length, segment + 1
    return segments


def reference_packed_attention(q, k, v, segments):
    """The NumPy loop of `test_layers` over the packed-row mask, built here from its rule."""
    index = np.arange(segments.shape[1])
    mask = ((index[:, None] >= index[None, :])[None]
            & (segments[:, :, None] == segments[:, None, :])
            & (segments[:, None, :] != 0))
    return reference_attention(np.asarray(q, np.float64), np.asarray(k, np.float64),
                               np.asarray(v, np.float64), mask)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), tokens=st.integers(2, 40), kv_heads=st.sampled_from([1, 2]),
       group=st.sampled_from([1, 2, 3]), block=st.sampled_from([1, 8, 64]))
def test_blockwise_and_dense_kernels_match_the_reference_on_real_tokens(
        seed, tokens, kv_heads, group, block):
    rng = np.random.default_rng(seed)
    q = rng.standard_normal((2, tokens, kv_heads * group, 4)).astype(np.float32)
    k, v = (rng.standard_normal((2, kv_heads, tokens, 4)).astype(np.float32) for _ in range(2))
    segments = packed_segments(rng, 2, tokens)
    want = reference_packed_attention(q, k, v, segments)
    real = segments != 0
    for kernel in ("dense", "blockwise"):
        got = np.asarray(self_attention(q, k, v, segments, kernel=kernel, block=block))
        np.testing.assert_allclose(got[real], want[real], atol=1e-5, err_msg=kernel)
        assert np.isfinite(got).all()


@pytest.mark.slow
def test_splash_kernel_matches_dense_in_value_and_gradient():
    """Pallas splash attention (interpreted on CPU) on packed rows with grouped heads."""
    rng = np.random.default_rng(3)
    tokens, kv_heads, group, width = 256, 2, 2, 32
    q = jnp.asarray(rng.standard_normal((2, tokens, kv_heads * group, width)), jnp.float32)
    k, v = (jnp.asarray(rng.standard_normal((2, kv_heads, tokens, width)), jnp.float32)
            for _ in range(2))
    segments = jnp.asarray(packed_segments(rng, 2, tokens))
    real = np.asarray(segments) != 0

    def loss(kernel):
        def fn(q, k, v):
            out = self_attention(q, k, v, segments, kernel=kernel, block=128, platform="cpu")
            return jnp.sum(jnp.where(real[..., None, None], out, 0.0) ** 2), out
        return fn

    (_, want), want_grads = jax.value_and_grad(loss("dense"), argnums=(0, 1, 2),
                                               has_aux=True)(q, k, v)
    (_, got), grads = jax.value_and_grad(loss("splash"), argnums=(0, 1, 2), has_aux=True)(q, k, v)
    np.testing.assert_allclose(np.asarray(got)[real], np.asarray(want)[real], atol=1e-5)
    for name, g, w in zip("qkv", grads, want_grads):
        np.testing.assert_allclose(g, w, atol=1e-4 * float(jnp.max(jnp.abs(w))), err_msg=name)


LEAN = dict(attention="blockwise", attention_block=8, remat="nothing_saveable", scan_layers=True)


@pytest.mark.parametrize("family,lean", [
    ("qwen2", dict(scan_layers=True)),
    ("qwen2", dict(remat="nothing_saveable")),
    ("qwen2", dict(remat="dots_with_no_batch_dims_saveable")),
    ("qwen2", LEAN), ("qwen3", LEAN), ("llama", LEAN),
])
def test_lean_model_equals_the_plain_model_forward_and_gradient(family, lean):
    """The same weights with scanned / rematerialised layers and the blockwise kernel give the
    plain model's hidden states and parameter gradients on packed rows with padding."""
    plain_config = tiny_test_config(family).for_platform("cpu")
    lean_config = tiny_test_config(family, **lean).for_platform("cpu")
    assert plain_config.scan_layers is False and plain_config.remat == "none"
    plain = init_model(plain_config, seed=4)
    graphdef_plain, state = nnx.split(plain)
    graphdef_lean, _ = nnx.split(init_model(lean_config, seed=4))
    rng = np.random.default_rng(0)
    tokens = jnp.asarray(rng.integers(3, 128, size=(3, 37)), jnp.int32)
    segments = packed_segments(rng, 3, 37)
    positions = np.zeros_like(segments)
    for b in range(3):
        for s in np.unique(segments[b]):
            where = np.flatnonzero(segments[b] == s)
            positions[b, where] = np.arange(where.size)
    real = jnp.asarray(segments != 0)

    def loss(graphdef):
        def fn(state):
            hidden = nnx.merge(graphdef, state).hidden_states(tokens, jnp.asarray(positions),
                                                              jnp.asarray(segments))
            return jnp.sum(jnp.where(real[..., None], jnp.tanh(hidden), 0.0)), hidden
        return jax.jit(jax.value_and_grad(fn, has_aux=True))

    (_, want), want_grads = loss(graphdef_plain)(state)
    (_, got), grads = loss(graphdef_lean)(state)
    np.testing.assert_allclose(np.asarray(got)[np.asarray(real)],
                               np.asarray(want)[np.asarray(real)], atol=1e-5)
    for (path, g), (_, w) in zip(jax.tree_util.tree_flatten_with_path(grads)[0],
                                 jax.tree_util.tree_flatten_with_path(want_grads)[0]):
        scale = max(float(jnp.max(jnp.abs(w))), 1e-30)
        assert float(jnp.max(jnp.abs(g - w))) <= 1e-4 * scale, jax.tree_util.keystr(path)


def test_for_platform_fills_auto_fields_and_keeps_explicit_ones():
    config = tiny_test_config("qwen2", remat="dots_saveable")
    assert config.attention == "auto" and config.scan_layers is None
    tpu = config.for_platform("tpu")
    assert tpu.attention == EXECUTION_DEFAULTS["tpu"]["attention"] == "splash"
    assert tpu.scan_layers is True and tpu.remat == "dots_saveable" and tpu.platform == "tpu"
    gpu = config.for_platform("cuda")
    assert gpu.platform == "gpu" and gpu.attention == "blockwise"
    # execution fields are not architecture: the Hugging Face config is the same
    assert tpu.to_hf_dict() == config.for_platform("cpu").to_hf_dict()
    with pytest.raises(ConfigError, match="platform 'metal'"):
        config.for_platform("metal")
    with pytest.raises(ConfigError, match="remat"):
        tiny_test_config("qwen2", remat="everything")
    with pytest.raises(ConfigError, match="logprob_chunk"):
        tiny_test_config("qwen2", logprob_chunk=-1)
