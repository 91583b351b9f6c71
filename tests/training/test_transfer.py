"""The cross-process weight copy (`training.transfer`), run on one process with fake CPU devices:
the union-mesh program must deliver exactly the trainer's values onto the rollout shardings, call
after call, whatever the training layout. (Two processes run it in test_distributed_run.py.)"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxopt_rl.training import transfer
from jaxopt_rl.training.transfer import WeightTransfer


@pytest.fixture
def across_processes(monkeypatch):
    """The union-mesh path, which one process would otherwise skip for `jax.device_put`."""
    monkeypatch.setattr(transfer, "spans_processes", lambda *meshes: True)


def _tree(mesh: Mesh, scale: float) -> dict:
    rng = np.random.default_rng(0)
    host = {"kernel": rng.standard_normal((8, 6)).astype(np.float32) * scale,
            "bias": np.arange(6, dtype=np.float32) * scale,
            "scalar": np.float32(scale)}
    specs = {"kernel": PartitionSpec("fsdp", "tensor"), "bias": PartitionSpec("tensor"),
             "scalar": PartitionSpec()}
    return host, {k: jax.device_put(v, NamedSharding(mesh, specs[k])) for k, v in host.items()}


@pytest.mark.parametrize("train_shape", [(4, 1), (2, 2)])
def test_the_union_copy_delivers_the_trainers_values_on_every_call(across_processes,
                                                                   train_shape):
    devices = np.array(jax.devices()[:8])
    train = Mesh(devices[:4].reshape(train_shape), ("fsdp", "tensor"))
    rollout = Mesh(devices[4:], ("data",))
    shardings = {k: NamedSharding(rollout, PartitionSpec()) for k in ("kernel", "bias", "scalar")}
    copy = WeightTransfer(train, rollout, shardings)
    assert copy.cross_process
    for scale in (1.0, -3.0):  # the second call overwrites the first copy
        host, params = _tree(train, scale)
        moved = copy(params)
        for name, leaf in moved.items():
            assert leaf.sharding == shardings[name]
            np.testing.assert_array_equal(np.asarray(leaf), host[name])
        for leaf in params.values():  # the trainer's own arrays are untouched (not donated)
            assert not leaf.is_deleted()


def test_a_copy_between_meshes_of_different_sizes_is_refused(across_processes):
    devices = np.array(jax.devices()[:6])
    train = Mesh(devices[:4].reshape(4, 1), ("fsdp", "tensor"))
    rollout = Mesh(devices[4:], ("data",))
    with pytest.raises(ValueError, match="as many rollout devices as training devices"):
        WeightTransfer(train, rollout, {})


def test_on_one_process_the_copy_is_a_plain_device_put():
    devices = np.array(jax.devices()[:8])
    train = Mesh(devices[:4].reshape(4, 1), ("fsdp", "tensor"))
    rollout = Mesh(devices[4:], ("data",))
    copy = WeightTransfer(train, rollout, {"bias": NamedSharding(rollout, PartitionSpec())})
    host, params = _tree(train, 2.0)
    assert not copy.cross_process
    moved = copy({"bias": params["bias"]})
    np.testing.assert_array_equal(np.asarray(moved["bias"]), host["bias"])


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama"])
def test_the_compute_dtype_copy_samples_what_the_trained_weights_sample(family):
    """`rollout.weight_dtype: compute`: float32 parameters, bfloat16 compute. The samplers'
    copy holds the matrices in bfloat16 (half the bytes), and since the model casts them to
    bfloat16 at use, the draws and their log-probs are those of the float32 weights, bit for
    bit (the independent reference: sampling from the trained weights themselves)."""
    from flax import nnx

    from jaxopt_rl.model import init_model
    from jaxopt_rl.model.testing import tiny_test_config
    from jaxopt_rl.sampling import generate
    from jaxopt_rl.training.transfer import sampler_weights

    model = init_model(tiny_test_config(family, compute_dtype="bfloat16"), seed=3)
    graphdef, params = nnx.split(model)
    cast = sampler_weights(params, "bfloat16")
    leaves = jax.tree.leaves(cast)
    assert any(leaf.dtype == jax.numpy.bfloat16 for leaf in leaves)
    assert all(leaf.dtype == np.float32 for leaf in leaves if leaf.ndim < 2)
    moved = sum(leaf.nbytes for leaf in leaves)
    assert moved < 0.6 * sum(leaf.nbytes for leaf in jax.tree.leaves(params))
    prompts = [[1, 5, 9, 2], [7, 3]]
    want = generate(nnx.merge(graphdef, params), prompts, 12, temperature=1.0, seed=11)
    got = generate(nnx.merge(graphdef, cast), prompts, 12, temperature=1.0, seed=11)
    np.testing.assert_array_equal(got.tokens, want.tokens)
    np.testing.assert_array_equal(got.model_logprobs, want.model_logprobs)


@pytest.mark.parametrize("dtype", [None, "bfloat16"])
def test_the_samplers_copy_never_shares_a_buffer_with_the_trainers_params(dtype):
    """The train step donates the state's buffers: a copy that forwarded any of them (a vector
    left in its dtype, say) would hold deleted arrays after the next step."""
    from jaxopt_rl.training.transfer import sampler_weights

    params = {"kernel": jnp.ones((4, 4), jnp.float32), "scale": jnp.ones((4,), jnp.float32)}
    copy = sampler_weights(params, dtype)
    for name in params:
        params[name].delete()  # what donation does to the trainer's buffers
        assert not copy[name].is_deleted()
        np.testing.assert_array_equal(np.asarray(copy[name], np.float32), 1.0)
