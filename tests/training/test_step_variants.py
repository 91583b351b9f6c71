"""The step's other settings on one device: SFT, KL to the reference (zero at the start) with
the truncated IS correction, bfloat16 parameters and compute."""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
from flax import nnx

from jaxopt_rl.training import grpo
from jaxopt_rl.training.config import MeshConfig
from jaxopt_rl.training.mesh import mesh_from_config, put_global
from jaxopt_rl.training.state import init_train_state
from jaxopt_rl.training.step import token_logprobs
from tests.training.helpers import compiled_step, random_batch, tiny_train_config

_logprobs = jax.jit(token_logprobs, static_argnums=0)


def one_step(config, loss="grpo", batch=None):
    mesh, step, sharding = compiled_step(config, (1, 1, 1), loss)
    graphdef, state, _, _ = init_train_state(config, mesh)
    batch = random_batch(0, config) if batch is None else batch
    params_before = jax.tree.map(np.asarray, state.params)
    new_state, metrics = step(state, put_global(batch, sharding))
    return graphdef, params_before, new_state, jax.tree.map(float, metrics), batch


def test_sft_loss_is_the_mean_completion_nll_under_the_initial_params():
    config = tiny_train_config()
    graphdef, params, state, metrics, batch = one_step(config, loss="sft")
    flat = jax.tree.map(lambda a: a.reshape(-1, a.shape[-1]), batch)
    logp, _ = _logprobs(graphdef, params, flat.tokens, flat.positions, flat.segment_ids)
    want = float(grpo.sft_loss(logp, flat.loss_mask))
    np.testing.assert_allclose(metrics["loss"], want, rtol=1e-5)
    assert int(state.step) == 1 and metrics["update_norm"] > 0


def test_kl_reference_and_truncated_is_weight():
    """KL on: the reference is the initial policy (KL 0 at the start) and stays frozen. TIS on:
    sampler log-probs offset by +0.5 from the trainer's give every token the weight exp(-0.5)
    (below the cap) and a clipped ratio of exactly 1."""
    config = tiny_train_config(kl_coef=0.1, tis_cap=2.0)
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    graphdef, state, _, _ = init_train_state(config, mesh)
    batch = random_batch(0, config)
    flat = jax.tree.map(lambda a: a.reshape(-1, a.shape[-1]), batch)
    logp, _ = _logprobs(graphdef, state.params, flat.tokens, flat.positions, flat.segment_ids)
    shifted = np.where(flat.loss_mask > 0, np.asarray(logp) + 0.5, 0.0).astype(np.float32)
    batch = dataclasses.replace(batch, old_logp=shifted.reshape(batch.old_logp.shape))
    _, params, state, metrics, _ = one_step(config, batch=batch)
    assert metrics["kl"] == 0.0
    for ref, before in zip(jax.tree.leaves(state.ref_params), jax.tree.leaves(params),
                           strict=True):
        np.testing.assert_array_equal(np.asarray(ref), before)
    np.testing.assert_allclose(metrics["is_weight"], np.exp(-0.5), rtol=1e-4)
    np.testing.assert_allclose(metrics["ratio_mean"], 1.0, rtol=1e-6)
    np.testing.assert_allclose(metrics["logp_mismatch"], 0.5, rtol=1e-4)


def test_bfloat16_params_and_compute():
    config = tiny_train_config()
    model = config.model.replace(param_dtype="bfloat16", compute_dtype="bfloat16")
    config = dataclasses.replace(config, model=model)
    _, _, state, metrics, _ = one_step(config)
    assert all(leaf.dtype == jnp.bfloat16 for leaf in jax.tree.leaves(state.params))
    assert np.isfinite(metrics["loss"]) and metrics["update_norm"] > 0
    assert isinstance(state.params, nnx.State)
