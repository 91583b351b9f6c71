"""The train step: sharded (2x2x2 fake CPU devices) equals single-device, compiles once, moves
nothing between host and device, and its gradient accumulation over microbatches equals one big
batch."""

from __future__ import annotations

import dataclasses

import jax
import numpy as np
import pytest

from jaxopt_rl.training.mesh import put_global
from jaxopt_rl.training.state import init_train_state
from tests.training.helpers import compiled_step, random_batch, tiny_train_config


def run_steps(config, mesh_shape, batches):
    """Host params after each step, metrics of each step, and the compiled step."""
    mesh, step, sharding = compiled_step(config, mesh_shape)
    _, state, _, _ = init_train_state(config, mesh)
    params, metrics = [], []
    for batch in batches:
        batch = put_global(batch, sharding)
        with jax.transfer_guard("disallow"):  # the step itself moves nothing host <-> device
            state, m = step(state, batch)
        params.append(host_params(state))
        metrics.append(jax.tree.map(float, m))
    return params, metrics, state


def host_params(state):
    return {jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_flatten_with_path(state.params)[0]}


@pytest.fixture(scope="module")
def single_run():
    config = tiny_train_config()
    batches = [random_batch(seed, config) for seed in range(3)]
    params, metrics, _ = run_steps(config, (1, 1, 1), batches)
    return config, batches, params, metrics


def test_sharded_step_equals_single_device(single_run):
    assert len(jax.devices()) == 8
    config, batches, want, want_metrics = single_run
    params, metrics, state = run_steps(config, (2, 2, 2), batches)
    got = params[-1]
    some_sharded = False
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(state.params)[0]:
        some_sharded |= not leaf.sharding.is_fully_replicated
        name = jax.tree_util.keystr(keypath)
        scale = max(np.max(np.abs(want[-1][name])), 1e-30)
        rel = np.max(np.abs(got[name] - want[-1][name])) / scale
        assert rel <= 1e-5, f"{name}: max relative difference {rel:.2e}"
    assert some_sharded
    assert compiled_step(config, (2, 2, 2))[1]._cache_size() == 1
    for key in want_metrics[0]:
        np.testing.assert_allclose(metrics[-1][key], want_metrics[-1][key], rtol=1e-4,
                                   atol=1e-7, err_msg=key)


def test_step_compiles_once(single_run):
    _, step, _ = compiled_step(single_run[0], (1, 1, 1))
    assert step._cache_size() == 1  # three calls, same shapes: one compilation


def test_metrics_are_finite_and_the_step_moves_params(single_run):
    metrics = single_run[3]
    for m in metrics:
        assert all(np.isfinite(v) for k, v in m.items() if not k.endswith("_max")), m
    assert metrics[0]["ratio_mean"] > 0 and 0 <= metrics[0]["clip_low"] <= 1
    assert metrics[0]["tokens"] > 0 and metrics[0]["update_norm"] > 0
    # warmup_steps=1: the first step already runs at the peak rate
    assert [m["learning_rate"] for m in metrics] == pytest.approx([1e-3] * 3)


def test_microbatches_accumulate_to_the_full_batch_gradient(single_run):
    """U=1 on the same rows as the fixture's U=2 gives the same first step (the loss of every
    microbatch is divided by the whole batch's horizon)."""
    _, batches, want, want_metrics = single_run
    one = tiny_train_config(microbatches=1)
    batch = jax.tree.map(lambda a: a.reshape(1, -1, a.shape[-1]), batches[0])
    params, metrics, _ = run_steps(one, (1, 1, 1), [batch])
    for name in params[0]:
        np.testing.assert_allclose(params[0][name], want[0][name], rtol=1e-5, atol=1e-7,
                                   err_msg=name)
    for key in ("loss", "grad_norm", "ratio_mean", "logp_mismatch", "entropy"):
        np.testing.assert_allclose(metrics[0][key], want_metrics[0][key], rtol=1e-5, err_msg=key)


@pytest.mark.parametrize("mesh_shape", [(1, 1, 1), (2, 2, 2)])
def test_a_batch_without_loss_tokens_takes_the_zero_gradient_optimizer_step(mesh_shape):
    """Every group of a step carried no signal, so the packed batch is all padding: its gradient
    is zero whatever the loss, and the step must equal the optimizer applied to a zero gradient
    (Adam's momentum from the earlier step still moves the weights), computed here with optax
    directly; the step counter advances and the metrics say no token was trained."""
    import optax

    from jaxopt_rl.training.packing import pack, split_microbatches
    from jaxopt_rl.training.state import abstract_train_state

    config = tiny_train_config()
    mesh, step, sharding = compiled_step(config, mesh_shape)
    _, state, _, _ = init_train_state(config, mesh)
    state, _ = step(state, put_global(random_batch(0, config), sharding))
    empty = split_microbatches(pack([], rows=config.grpo.rows, horizon=config.grpo.horizon)
                               .batch, config.grpo.microbatches)
    assert not np.any(empty.loss_mask)
    params_before = jax.device_get(state.params)
    opt_before = jax.device_get(state.opt_state)
    step_before = int(state.step)
    _, _, _, tx = abstract_train_state(config, mesh)
    zeros = jax.tree.map(np.zeros_like, params_before)
    updates, _ = tx.update(zeros, opt_before, params_before)
    want = optax.apply_updates(params_before, updates)

    state, metrics = step(state, put_global(empty, sharding))
    assert int(state.step) == step_before + 1
    assert float(metrics["tokens"]) == 0.0
    assert float(metrics["grad_norm"]) == 0.0 and float(metrics["loss"]) == 0.0
    assert float(metrics["update_norm"]) > 0.0  # the momentum of the first step
    got = jax.device_get(state.params)
    for (path, g), w in zip(jax.tree_util.tree_flatten_with_path(got)[0],
                            jax.tree.leaves(want)):
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-9,
                                   err_msg=jax.tree_util.keystr(path))


def test_lean_sharded_step_equals_the_plain_single_device_step(single_run):
    """The accelerators' forms (blockwise attention, full remat, scanned layers, chunked
    log-probs) on 2x2x2 devices give the plain single-device run's parameters and metrics."""
    config, batches, want, want_metrics = single_run
    lean_model = config.model.replace(attention="blockwise", attention_block=8,
                                      remat="nothing_saveable", scan_layers=True,
                                      logprob_chunk=8)
    lean = dataclasses.replace(config, model=lean_model)
    params, metrics, _ = run_steps(lean, (2, 2, 2), batches)
    for name, value in params[-1].items():
        scale = max(np.max(np.abs(want[-1][name])), 1e-30)
        rel = np.max(np.abs(value - want[-1][name])) / scale
        assert rel <= 1e-5, f"{name}: max relative difference {rel:.2e}"
    for key in want_metrics[0]:
        np.testing.assert_allclose(metrics[-1][key], want_metrics[-1][key], rtol=1e-4,
                                   atol=1e-7, err_msg=key)
