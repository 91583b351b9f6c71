"""The train step: sharded (2x2x2 fake CPU devices) equals single-device, compiles once, and its
gradient accumulation over microbatches equals one big batch."""

from __future__ import annotations

import jax
import numpy as np
import pytest

from jaxopt_rl.training.config import MeshConfig
from jaxopt_rl.training.mesh import mesh_from_config, put_global
from jaxopt_rl.training.state import init_train_state
from jaxopt_rl.training.step import StepSettings, batch_sharding, make_train_step
from tests.training.helpers import random_batch, tiny_train_config


def run_steps(config, mesh, batches):
    graphdef, state, shardings, tx = init_train_state(config, mesh)
    grpo = config.grpo
    rows = grpo.rows // grpo.microbatches
    step = make_train_step(graphdef, tx, StepSettings.from_config(grpo), shardings, mesh, rows)
    sharding = batch_sharding(mesh, rows)
    metrics = []
    for batch in batches:
        state, m = step(state, put_global(batch, sharding))
        metrics.append(jax.tree.map(float, m))
    return state, metrics, step


def host_params(state):
    return {jax.tree_util.keystr(k): np.asarray(v)
            for k, v in jax.tree_util.tree_flatten_with_path(state.params)[0]}


@pytest.fixture(scope="module")
def single_run():
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    batches = [random_batch(seed, config) for seed in range(3)]
    state, metrics, step = run_steps(config, mesh, batches)
    return config, batches, host_params(state), metrics, step


def test_sharded_step_equals_single_device(single_run):
    assert len(jax.devices()) == 8
    config, batches, want, want_metrics, _ = single_run
    mesh = mesh_from_config(MeshConfig(2, 2, 2))
    state, metrics, _ = run_steps(config, mesh, batches)
    got = host_params(state)
    some_sharded = False
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(state.params)[0]:
        some_sharded |= not leaf.sharding.is_fully_replicated
        name = jax.tree_util.keystr(keypath)
        scale = max(np.max(np.abs(want[name])), 1e-30)
        rel = np.max(np.abs(got[name] - want[name])) / scale
        assert rel <= 1e-5, f"{name}: max relative difference {rel:.2e}"
    assert some_sharded
    for key in want_metrics[0]:
        np.testing.assert_allclose(metrics[-1][key], want_metrics[-1][key], rtol=1e-4,
                                   atol=1e-7, err_msg=key)


def test_step_compiles_once(single_run):
    *_, step = single_run
    assert step._cache_size() == 1  # three calls, same shapes: one compilation


def test_metrics_are_finite_and_the_step_moves_params(single_run):
    metrics = single_run[3]
    for m in metrics:
        assert all(np.isfinite(v) for k, v in m.items() if not k.endswith("_max")), m
    assert metrics[0]["ratio_mean"] > 0 and 0 <= metrics[0]["clip_low"] <= 1
    assert metrics[0]["tokens"] > 0 and metrics[0]["update_norm"] > 0


def test_microbatches_accumulate_to_the_full_batch_gradient():
    """U=2 and U=1 on the same rows give the same first step (the horizon is the batch's)."""
    results = []
    for u in (1, 2):
        config = tiny_train_config(microbatches=u)
        mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
        batch = random_batch(0, config)
        state, metrics, _ = run_steps(config, mesh, [batch])
        results.append((host_params(state), metrics[0]))
    (p1, m1), (p2, m2) = results
    for name in p1:
        np.testing.assert_allclose(p2[name], p1[name], rtol=1e-5, atol=1e-7, err_msg=name)
    for key in ("loss", "grad_norm", "ratio_mean", "logp_mismatch", "entropy"):
        np.testing.assert_allclose(m2[key], m1[key], rtol=1e-5, err_msg=key)
