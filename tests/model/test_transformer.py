"""Transformer invariants: cached decoding = full forward, packing = separate rows, left padding
changes nothing, a grown cache = one allocated at full size, sharded = unsharded (8 fake CPU
devices), born-sharded init = plain init."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx

from jaxopt_rl.model import KVCache, init_model, make_mesh
from jaxopt_rl.model.testing import tiny_test_config

FAMILIES = ["qwen2", "qwen3", "llama"]


@pytest.fixture(scope="module", params=FAMILIES)
def model(request):
    return init_model(tiny_test_config(request.param), seed=1)


def jitted_forward(model):
    graphdef, state = nnx.split(model)
    fn = jax.jit(lambda state, ids, pos, seg: nnx.merge(graphdef, state)(ids, pos, seg))
    return lambda ids, pos=None, seg=None: np.asarray(fn(state, ids, pos, seg))


def test_cached_decoding_equals_full_forward_with_left_padding(model):
    rng = np.random.default_rng(0)
    sequences = [rng.integers(3, 128, size=n).tolist() for n in (11, 6)]
    prompt_len, total = 7, 11
    # row 0: 7 prompt tokens then 4 decoded one at a time; row 1: 3 pads + 4 prompt, then 2 more
    prompt = np.array([sequences[0][:7], [0, 0, 0, *sequences[1][:4]]], np.int32)
    start = jnp.array([0, 3], jnp.int32)
    graphdef, state = nnx.split(model)

    @jax.jit
    def step(state, ids, cache):
        return nnx.merge(graphdef, state).decode(ids, cache)

    cache = KVCache.empty(model.config, start, num_slots=total)
    logits, cache = step(state, jnp.asarray(prompt), cache)
    cached = [np.asarray(logits)]
    for i in range(prompt_len, total):
        ids = np.array([[sequences[0][i]], [sequences[1][i - 3] if i - 3 < 6 else 0]], np.int32)
        logits, cache = step(state, jnp.asarray(ids), cache)
        cached.append(np.asarray(logits))
    cached = np.concatenate(cached, axis=1)
    forward = jitted_forward(model)
    full0 = forward(jnp.asarray([sequences[0]]))[0]
    full1 = forward(jnp.asarray([sequences[1]]))[0]
    np.testing.assert_allclose(cached[0], full0, atol=1e-5)
    np.testing.assert_allclose(cached[1, 3:9], full1, atol=1e-5)
    assert int(cache.length) == total


def test_decoding_into_a_grown_cache_equals_decoding_into_a_full_size_one(model):
    """What the sampler relies on to start with a prompt-sized cache and grow it: the empty
    slots a cache carries beyond the filled ones change nothing but float rounding (the kernels
    tile a longer slot axis differently)."""
    rng = np.random.default_rng(5)
    prompt = np.concatenate([[[0, 0]], rng.integers(3, 128, size=(1, 2))], axis=1)
    prompt = np.concatenate([prompt, rng.integers(3, 128, size=(1, 4))]).astype(np.int32)
    start = jnp.array([2, 0], jnp.int32)
    later = rng.integers(3, 128, size=(2, 5)).astype(np.int32)
    graphdef, state = nnx.split(model)

    @jax.jit
    def step(state, ids, cache):
        return nnx.merge(graphdef, state).decode(ids, cache)

    def run(cache, grow_to):
        logits, cache = step(state, jnp.asarray(prompt), cache)
        outputs = [np.asarray(logits)]
        for i in range(later.shape[1]):
            cache = cache.grow(grow_to[i])
            logits, cache = step(state, jnp.asarray(later[:, i : i + 1]), cache)
            outputs.append(np.asarray(logits))
        return np.concatenate(outputs, axis=1), cache

    full, full_cache = run(KVCache.empty(model.config, start, 9), [9] * 5)
    grown, grown_cache = run(KVCache.empty(model.config, start, 4), [5, 7, 7, 9, 9])
    # pad positions (row 0's first two) see no slot at all, so their outputs are meaningless
    # and never read: compare real tokens only
    np.testing.assert_allclose(grown[0, 2:], full[0, 2:], atol=1e-5)
    np.testing.assert_allclose(grown[1], full[1], atol=1e-5)
    for a, b in zip(grown_cache.keys + grown_cache.values, full_cache.keys + full_cache.values):
        np.testing.assert_allclose(np.asarray(a[0, :, 2:]), np.asarray(b[0, :, 2:]), atol=1e-5)
        np.testing.assert_allclose(np.asarray(a[1]), np.asarray(b[1]), atol=1e-5)
    assert int(grown_cache.length) == 9 and grown_cache.num_slots == 9


def test_grow_appends_empty_slots_and_refuses_to_shrink():
    config = tiny_test_config("qwen2")
    cache = KVCache.empty(config, jnp.array([1, 0], jnp.int32), num_slots=3)
    cache = cache.replace(keys=tuple(k + 1.0 for k in cache.keys), length=jnp.asarray(2))
    grown = cache.grow(5)
    assert grown.num_slots == 5 and int(grown.length) == 2
    assert grown.start_B.tolist() == [1, 0]
    for key in grown.keys:
        np.testing.assert_array_equal(np.asarray(key[:, :, :3]), 1.0)
        np.testing.assert_array_equal(np.asarray(key[:, :, 3:]), 0.0)
    assert cache.grow(3) is cache
    with pytest.raises(ValueError, match="cannot shrink a KV cache from 3 to 2 slots"):
        cache.grow(2)


def test_packed_segments_equal_separate_rows(model):
    rng = np.random.default_rng(1)
    a, b = rng.integers(3, 128, size=5), rng.integers(3, 128, size=4)
    ids = np.concatenate([a, b, [0, 0, 0]])[None].astype(np.int32)
    segments = np.array([[1] * 5 + [2] * 4 + [0] * 3], np.int32)
    positions = np.array([[*range(5), *range(4), 0, 0, 0]], np.int32)
    forward = jitted_forward(model)
    packed = forward(jnp.asarray(ids), jnp.asarray(positions), jnp.asarray(segments))[0]
    np.testing.assert_allclose(packed[:5], forward(jnp.asarray(a[None]))[0], atol=1e-5)
    np.testing.assert_allclose(packed[5:9], forward(jnp.asarray(b[None]))[0], atol=1e-5)
    assert np.all(np.isfinite(packed))


def test_bfloat16_compute_tracks_float32():
    config = tiny_test_config("qwen3")
    ids = jnp.asarray(np.random.default_rng(2).integers(0, 128, size=(2, 9)))
    full_model = init_model(config, seed=3)
    half_model = init_model(
        config.replace(param_dtype="bfloat16", compute_dtype="bfloat16"), seed=0
    )
    nnx.update(half_model, jax.tree.map(lambda x: x.astype(jnp.bfloat16), nnx.state(full_model)))
    assert half_model.layers[0].mlp.up_proj.kernel[...].dtype == jnp.bfloat16
    full = jitted_forward(full_model)(ids)
    half = jitted_forward(half_model)(ids)
    assert half.dtype == jnp.bfloat16
    # same weights rounded to bf16 (~3 significant digits): logits agree to a few percent
    assert np.max(np.abs(half.astype(np.float32) - full)) < 0.05 * np.max(np.abs(full))


def test_sharded_init_and_forward_equal_unsharded():
    config = tiny_test_config("llama", qkv_bias=True, out_bias=True, mlp_bias=True)
    mesh = make_mesh(data=2, fsdp=2, tensor=2)
    sharded = init_model(config, seed=5, mesh=mesh)
    one_device = init_model(config, seed=5, mesh=make_mesh(devices=jax.devices()[:1]))
    plain = init_model(config, seed=5)  # eager
    for (path, a), (_, b), (_, c) in zip(
        jax.tree_util.tree_flatten_with_path(nnx.state(sharded))[0],
        jax.tree_util.tree_flatten_with_path(nnx.state(one_device))[0],
        jax.tree_util.tree_flatten_with_path(nnx.state(plain))[0],
    ):
        np.testing.assert_array_equal(
            np.asarray(a), np.asarray(b), err_msg=jax.tree_util.keystr(path)
        )
        np.testing.assert_allclose(
            np.asarray(a), np.asarray(c), atol=1e-6, err_msg=jax.tree_util.keystr(path)
        )
    q_kernel = sharded.layers[0].self_attn.q_proj.kernel[...]
    assert q_kernel.sharding.spec == jax.sharding.PartitionSpec("fsdp", "tensor")
    assert len(q_kernel.sharding.device_set) == 8

    ids = np.random.default_rng(4).integers(0, 128, size=(4, 10)).astype(np.int32)
    rows = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(("data", "fsdp"), None))
    got = jitted_forward(sharded)(jax.device_put(ids, rows))
    # sharded matmuls sum in a different order: float32 rounding only
    np.testing.assert_allclose(got, jitted_forward(plain)(ids), atol=1e-4)
