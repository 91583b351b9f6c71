"""`blockwise_attention` against the slow reference `layers.attend` under the packed causal mask.

Every expected value comes from `attend` with the mask built here in NumPy; the function under
test is never its own reference. Padding queries (segment 0) are the one documented difference:
`attend` averages all values there, `blockwise_attention` returns zeros.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from jaxopt_rl.model.blockwise import blockwise_attention
from jaxopt_rl.model.layers import attend

BLOCK_SIZES = (1, 4, 16, 64, 128)


def packed_mask(segment_ids_BL) -> jax.Array:
    """The contract's mask: causal by index, same segment, segment 0 never seen."""
    segment_ids_BL = jnp.asarray(segment_ids_BL)
    positions_L = jnp.arange(segment_ids_BL.shape[1])
    causal_LS = positions_L[:, None] >= positions_L[None, :]
    same_BLS = segment_ids_BL[:, :, None] == segment_ids_BL[:, None, :]
    return causal_LS[None] & same_BLS & (segment_ids_BL[:, None, :] != 0)


def reference(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL):
    return attend(q_BLQE, k_BKSE, v_BKSE, packed_mask(segment_ids_BL))


@st.composite
def segment_rows(draw, batch: int, tokens: int) -> np.ndarray:
    """Packed rows: random cut points, each piece a trajectory or padding (0), so that padding
    can sit in the middle or at the tail; a later piece may reuse an earlier id."""
    rows = []
    for _ in range(batch):
        cuts = draw(st.lists(st.integers(1, max(tokens - 1, 1)), max_size=6, unique=True))
        bounds = [0, *sorted(c for c in cuts if c < tokens), tokens]
        ids = draw(st.lists(st.integers(0, 4), min_size=len(bounds) - 1, max_size=len(bounds) - 1))
        row = np.zeros(tokens, np.int32)
        for start, end, segment in zip(bounds[:-1], bounds[1:], ids, strict=True):
            row[start:end] = segment
        rows.append(row)
    return np.stack(rows)


@st.composite
def cases(draw, max_tokens: int = 70):
    batch = draw(st.integers(1, 2))
    tokens = draw(st.integers(1, max_tokens))
    kv_heads = draw(st.sampled_from([1, 2]))
    group = draw(st.sampled_from([1, 2, 3]))
    head_dim = draw(st.sampled_from([2, 4, 8]))
    block_size = draw(st.sampled_from(BLOCK_SIZES))
    segment_ids_BL = draw(segment_rows(batch, tokens))
    seed = draw(st.integers(0, 2**32 - 1))
    return batch, tokens, kv_heads, group, head_dim, block_size, segment_ids_BL, seed


def make_inputs(batch, tokens, kv_heads, group, head_dim, seed, dtype=jnp.float32):
    rng = np.random.default_rng(seed)
    q_BLQE = rng.normal(size=(batch, tokens, kv_heads * group, head_dim))
    k_BKSE = rng.normal(size=(batch, kv_heads, tokens, head_dim))
    v_BKSE = rng.normal(size=(batch, kv_heads, tokens, head_dim))
    cot_BLQE = rng.normal(size=q_BLQE.shape)
    return (*(jnp.asarray(x, dtype) for x in (q_BLQE, k_BKSE, v_BKSE)), jnp.asarray(cot_BLQE))


def real_BL11(segment_ids_BL) -> np.ndarray:
    return (np.asarray(segment_ids_BL) != 0)[:, :, None, None]


def check_forward(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, block_size):
    out_BLQE = jax.jit(blockwise_attention, static_argnames="block_size")(
        q_BLQE, k_BKSE, v_BKSE, jnp.asarray(segment_ids_BL), block_size=block_size
    )
    expected_BLQE = jax.jit(reference)(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL)
    real = np.broadcast_to(real_BL11(segment_ids_BL), out_BLQE.shape)
    assert out_BLQE.shape == q_BLQE.shape and out_BLQE.dtype == v_BKSE.dtype
    assert np.isfinite(np.asarray(out_BLQE)).all()
    np.testing.assert_allclose(
        np.asarray(out_BLQE)[real], np.asarray(expected_BLQE)[real], atol=1e-5, rtol=1e-5
    )
    # padding queries: exactly zero (where `attend` would return the mean of all values)
    assert (np.asarray(out_BLQE)[~real] == 0).all()


@settings(max_examples=35, deadline=None)
@given(cases())
def test_forward_matches_reference_on_real_rows_and_zeros_padding(case):
    batch, tokens, kv_heads, group, head_dim, block_size, segment_ids_BL, seed = case
    q_BLQE, k_BKSE, v_BKSE, _ = make_inputs(batch, tokens, kv_heads, group, head_dim, seed)
    check_forward(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, block_size)


def fixed_segments() -> np.ndarray:
    """Row 0: three trajectories, padding in the middle and at the tail; row 1: all padding."""
    segment_ids_BL = np.zeros((2, 45), np.int32)
    segment_ids_BL[0, :9] = 1
    segment_ids_BL[0, 9:20] = 2
    segment_ids_BL[0, 24:40] = 3
    return segment_ids_BL


def test_padding_rows_are_exact_zeros_and_finite():
    segment_ids_BL = fixed_segments()
    q_BLQE, k_BKSE, v_BKSE, _ = make_inputs(2, 45, 2, 2, 8, seed=7)
    # large logits: a NaN or overflow in a fully masked row would show
    q_BLQE = q_BLQE * 30.0
    out_BLQE = blockwise_attention(
        q_BLQE, k_BKSE, v_BKSE, jnp.asarray(segment_ids_BL), block_size=16
    )
    out = np.asarray(out_BLQE)
    assert np.isfinite(out).all()
    assert (out[1] == 0).all()
    assert (out[0, 20:24] == 0).all() and (out[0, 40:] == 0).all()
    # the reference really differs there, so the zeros are a choice, not an accident
    expected = np.asarray(reference(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL))
    assert np.abs(expected[1]).max() > 0.01
    check_forward(q_BLQE, k_BKSE, v_BKSE, segment_ids_BL, 16)


def check_gradients(q_BLQE, k_BKSE, v_BKSE, cot_BLQE, segment_ids_BL, block_size):
    weight_BLQE = cot_BLQE * real_BL11(segment_ids_BL)
    segments = jnp.asarray(segment_ids_BL)

    def loss(q, k, v):
        return jnp.sum(blockwise_attention(q, k, v, segments, block_size=block_size) * weight_BLQE)

    def reference_loss(q, k, v):
        return jnp.sum(reference(q, k, v, segment_ids_BL) * weight_BLQE)

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(q_BLQE, k_BKSE, v_BKSE)
    expected = jax.jit(jax.grad(reference_loss, argnums=(0, 1, 2)))(q_BLQE, k_BKSE, v_BKSE)
    for name, grad, want in zip("qkv", grads, expected, strict=True):
        assert grad.shape == want.shape and grad.dtype == want.dtype, name
        assert np.isfinite(np.asarray(grad)).all(), name
        np.testing.assert_allclose(
            np.asarray(grad), np.asarray(want), atol=1e-5, rtol=1e-4, err_msg=f"d{name}"
        )


@settings(max_examples=8, deadline=None)
@given(cases(max_tokens=40))
def test_gradients_match_reference(case):
    batch, tokens, kv_heads, group, head_dim, block_size, segment_ids_BL, seed = case
    q_BLQE, k_BKSE, v_BKSE, cot_BLQE = make_inputs(batch, tokens, kv_heads, group, head_dim, seed)
    check_gradients(q_BLQE, k_BKSE, v_BKSE, cot_BLQE, segment_ids_BL, block_size)


def test_gradients_match_reference_fixed_case_with_padding():
    q_BLQE, k_BKSE, v_BKSE, cot_BLQE = make_inputs(2, 45, 2, 3, 4, seed=3)
    check_forward(q_BLQE, k_BKSE, v_BKSE, fixed_segments(), block_size=8)
    check_gradients(q_BLQE, k_BKSE, v_BKSE, cot_BLQE, fixed_segments(), block_size=8)


def test_jit_equals_eager_and_traces_abstractly():
    segment_ids_BL = fixed_segments()
    q_BLQE, k_BKSE, v_BKSE, _ = make_inputs(2, 45, 1, 2, 8, seed=11)
    args = (q_BLQE, k_BKSE, v_BKSE, jnp.asarray(segment_ids_BL))
    eager = blockwise_attention(*args, block_size=16)
    jitted = jax.jit(blockwise_attention, static_argnames="block_size")(*args, block_size=16)
    np.testing.assert_allclose(np.asarray(jitted), np.asarray(eager), atol=1e-6, rtol=1e-6)

    abstract = [jax.ShapeDtypeStruct(x.shape, x.dtype) for x in args]
    shape = jax.eval_shape(lambda *a: blockwise_attention(*a, block_size=16), *abstract)
    assert shape.shape == q_BLQE.shape and shape.dtype == v_BKSE.dtype
    grad_shapes = jax.eval_shape(
        jax.grad(lambda q, k, v, s: blockwise_attention(q, k, v, s).sum(), argnums=(0, 1, 2)),
        *abstract,
    )
    assert [g.shape for g in grad_shapes] == [x.shape for x in args[:3]]


def test_bfloat16_inputs_stay_close_to_the_float32_reference():
    segment_ids_BL = fixed_segments()
    q_BLQE, k_BKSE, v_BKSE, cot_BLQE = make_inputs(2, 45, 2, 2, 8, seed=5, dtype=jnp.bfloat16)
    out_BLQE = jax.jit(blockwise_attention, static_argnames="block_size")(
        q_BLQE, k_BKSE, v_BKSE, jnp.asarray(segment_ids_BL), block_size=16
    )
    assert out_BLQE.dtype == jnp.bfloat16
    f32 = [x.astype(jnp.float32) for x in (q_BLQE, k_BKSE, v_BKSE)]
    expected = np.asarray(reference(*f32, segment_ids_BL))
    real = np.broadcast_to(real_BL11(segment_ids_BL), expected.shape)
    out = np.asarray(out_BLQE.astype(jnp.float32))
    np.testing.assert_allclose(out[real], expected[real], atol=2e-2, rtol=2e-2)
    assert (out[~real] == 0).all()

    def loss(q, k, v):
        out = blockwise_attention(q, k, v, jnp.asarray(segment_ids_BL), block_size=16)
        return jnp.sum(out.astype(jnp.float32) * cot_BLQE)

    grads = jax.jit(jax.grad(loss, argnums=(0, 1, 2)))(q_BLQE, k_BKSE, v_BKSE)
    assert [g.dtype for g in grads] == [jnp.bfloat16] * 3
    assert all(np.isfinite(np.asarray(g.astype(jnp.float32))).all() for g in grads)


def test_backward_never_materialises_the_full_score_matrix():
    batch, tokens, kv_heads, group, head_dim = 1, 4096, 1, 2, 16
    num_heads = kv_heads * group
    abstract = (
        jax.ShapeDtypeStruct((batch, tokens, num_heads, head_dim), jnp.float32),
        jax.ShapeDtypeStruct((batch, kv_heads, tokens, head_dim), jnp.float32),
        jax.ShapeDtypeStruct((batch, kv_heads, tokens, head_dim), jnp.float32),
        jax.ShapeDtypeStruct((batch, tokens), jnp.int32),
    )
    one_score_matrix_per_head = 4 * tokens * tokens * num_heads

    def temporaries(attention):
        def loss(q, k, v, segment_ids):
            return jnp.sum(attention(q, k, v, segment_ids) ** 2)

        compiled = jax.jit(jax.grad(loss, argnums=(0, 1, 2))).lower(*abstract).compile()
        analysis = compiled.memory_analysis()
        if analysis is None:
            pytest.skip("this backend reports no memory analysis")
        return analysis.temp_size_in_bytes

    blockwise = temporaries(lambda *a: blockwise_attention(*a, block_size=256))
    assert blockwise < 0.25 * one_score_matrix_per_head, (blockwise, one_score_matrix_per_head)
    # the bound is one the dense reference breaks, so the check can fail
    dense = temporaries(lambda q, k, v, s: attend(q, k, v, packed_mask(s)))
    assert dense > one_score_matrix_per_head, (dense, one_score_matrix_per_head)
