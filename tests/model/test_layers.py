"""Layer kernels against slow, obviously-correct NumPy loops, plus RoPE/attention properties."""

import math

import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.model.config import RopeScaling
from jaxopt_rl.model.layers import RMSNorm, apply_rope, attend, rope_inverse_frequencies


def reference_inverse_frequencies(head_dim, theta, scaling):
    """Llama 3.1's published rule, one frequency at a time."""
    result = []
    for i in range(0, head_dim, 2):
        freq = 1.0 / theta ** (i / head_dim)
        if scaling is not None:
            wavelength = 2 * math.pi / freq
            low = scaling.original_max_position_embeddings / scaling.low_freq_factor
            high = scaling.original_max_position_embeddings / scaling.high_freq_factor
            if wavelength > low:
                freq = freq / scaling.factor
            elif wavelength >= high:
                smooth = (
                    scaling.original_max_position_embeddings / wavelength - scaling.low_freq_factor
                ) / (scaling.high_freq_factor - scaling.low_freq_factor)
                freq = (1 - smooth) * freq / scaling.factor + smooth * freq
        result.append(freq)
    return np.array(result)


def reference_rope(x, positions, inv_freq):
    batch, tokens, heads, width = x.shape
    half = width // 2
    out = np.zeros_like(x, dtype=np.float64)
    for b in range(batch):
        for t in range(tokens):
            for n in range(heads):
                for i in range(half):
                    angle = positions[b, t] * inv_freq[i]
                    a, c = x[b, t, n, i], x[b, t, n, i + half]
                    out[b, t, n, i] = a * math.cos(angle) - c * math.sin(angle)
                    out[b, t, n, i + half] = c * math.cos(angle) + a * math.sin(angle)
    return out


def reference_attention(q, k, v, mask):
    batch, tokens, heads, width = q.shape
    group = heads // k.shape[1]  # k, v: [B, K, S, H]
    out = np.zeros(q.shape)
    for b in range(batch):
        for n in range(heads):
            for t in range(tokens):
                scores = np.array(
                    [q[b, t, n] @ k[b, n // group, s] / math.sqrt(width) for s in range(k.shape[2])]
                )
                scores = np.where(mask[b, t], scores, -1e30)
                weights = np.exp(scores - scores.max())
                weights /= weights.sum()
                out[b, t, n] = sum(weights[s] * v[b, n // group, s] for s in range(k.shape[2]))
    return out


@given(
    st.sampled_from([8, 16, 64, 128]),
    st.sampled_from([10000.0, 500000.0, 1e6]),
    st.one_of(
        st.none(),
        st.builds(
            RopeScaling,
            factor=st.sampled_from([2.0, 8.0, 32.0]),
            low_freq_factor=st.just(1.0),
            high_freq_factor=st.sampled_from([2.0, 4.0]),
            original_max_position_embeddings=st.sampled_from([16, 64, 8192]),
        ),
    ),
)
def test_rope_inverse_frequencies_match_the_published_rule(head_dim, theta, scaling):
    got = rope_inverse_frequencies(head_dim, theta, scaling)
    assert got.dtype == np.float32 and got.shape == (head_dim // 2,)
    np.testing.assert_allclose(
        got, reference_inverse_frequencies(head_dim, theta, scaling), rtol=2e-6
    )


def test_llama3_scaling_changes_only_the_low_frequencies():
    scaling = RopeScaling(8.0, 1.0, 4.0, 32)
    plain = rope_inverse_frequencies(16, 500000.0, None)
    scaled = rope_inverse_frequencies(16, 500000.0, scaling)
    assert scaled[0] == plain[0]  # the fastest rotation is untouched
    np.testing.assert_allclose(scaled[-1], plain[-1] / 8.0, rtol=1e-6)


# Shapes come from a short list so each compiles once; hypothesis varies the values.
@settings(max_examples=20)
@given(st.sampled_from([2, 4, 8]), st.integers(0, 2**31 - 1))
def test_apply_rope_matches_loop(width, seed):
    batch, tokens, heads = 2, 3, 2
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, tokens, heads, width)).astype(np.float32)
    positions = rng.integers(-3, 200, size=(batch, tokens))
    inv_freq = rope_inverse_frequencies(width, 10000.0, None)
    got = np.asarray(apply_rope(jnp.asarray(x), jnp.asarray(positions), jnp.asarray(inv_freq)))
    np.testing.assert_allclose(got, reference_rope(x, positions, inv_freq), atol=2e-5)


def test_rope_scores_depend_only_on_relative_position():
    rng = np.random.default_rng(0)
    q, k = rng.normal(size=(2, 1, 1, 1, 16)).astype(np.float32)
    inv_freq = jnp.asarray(rope_inverse_frequencies(16, 10000.0, None))

    def score(m, n):
        qm = apply_rope(jnp.asarray(q), jnp.array([[m]]), inv_freq)
        kn = apply_rope(jnp.asarray(k), jnp.array([[n]]), inv_freq)
        return float(jnp.sum(qm * kn))

    assert math.isclose(score(5, 2), score(103, 100), rel_tol=1e-4)
    assert math.isclose(score(0, 0), float(np.sum(q * k)), rel_tol=1e-5)


@settings(max_examples=30)
@given(
    st.sampled_from([(1, 1), (2, 1), (4, 2), (3, 3), (7, 1)]),
    st.sampled_from([1, 3]),  # one token: a decode step, which XLA:CPU runs per query head
    st.integers(0, 2**31 - 1),
)
def test_attend_matches_loop_with_grouped_heads_and_masks(heads, tokens, seed):
    batch, slots = 2, 5
    num_heads, num_kv = heads
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(batch, tokens, num_heads, 4)).astype(np.float32)
    k = rng.normal(size=(batch, num_kv, slots, 4)).astype(np.float32)
    v = rng.normal(size=(batch, num_kv, slots, 4)).astype(np.float32)
    mask = rng.random((batch, tokens, slots)) < 0.7
    mask[..., 0] = True  # every query sees something (fully masked rows are padding)
    args = [jnp.asarray(x) for x in (q, k, v, mask)]
    expected = reference_attention(q, k, v, mask)
    np.testing.assert_allclose(np.asarray(attend(*args)), expected, atol=1e-5)
    np.testing.assert_allclose(np.asarray(jax.jit(attend)(*args)), expected, atol=1e-5)


def test_fully_masked_query_row_is_finite():
    q = jnp.ones((1, 1, 2, 4))
    k = v = jnp.ones((1, 1, 3, 4))
    out = attend(q, k, v, jnp.zeros((1, 1, 3), bool))
    assert bool(jnp.all(jnp.isfinite(out)))


@given(
    hnp.arrays(np.float32, (3, 8), elements=st.floats(-100, 100, width=32)),
    st.sampled_from(["float32", "bfloat16"]),
)
def test_rms_norm_matches_numpy(x, compute_dtype):
    norm = RMSNorm(8, 1e-6, param_dtype="float32", compute_dtype=compute_dtype)
    norm.scale[...] = jnp.linspace(0.5, 2.0, 8)
    got = np.asarray(norm(jnp.asarray(x, compute_dtype)).astype(jnp.float32))
    x64 = np.asarray(jnp.asarray(x, compute_dtype).astype(jnp.float32), np.float64)
    expected = (
        x64 / np.sqrt(np.mean(x64**2, axis=-1, keepdims=True) + 1e-6) * np.linspace(0.5, 2.0, 8)
    )
    tolerance = 1e-5 if compute_dtype == "float32" else 2e-2
    np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance)
