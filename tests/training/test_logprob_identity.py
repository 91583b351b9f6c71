"""The log-prob contract: on CPU in float32 the sampler's `model_logprobs` of a batch equal the
trainer's recomputed log-probs of the same tokens, packed several trajectories to a row, under
the same parameters (within 1e-5), for every model family; and the step's mismatch metric of
such a batch reads ~0."""

from __future__ import annotations

import jax
import numpy as np
import pytest
from flax import nnx

from jaxopt_rl.model.testing import tiny_test_config
from jaxopt_rl.model.transformer import init_model
from jaxopt_rl.rollouts.testing import synthetic_rollouts
from jaxopt_rl.sampling import generate
from jaxopt_rl.training.batch import BatchBuilder
from jaxopt_rl.training.config import GRPOConfig
from jaxopt_rl.training.mesh import put_global
from jaxopt_rl.training.packing import split_microbatches
from jaxopt_rl.training.state import init_train_state
from jaxopt_rl.training.step import token_logprobs
from tests.training.helpers import compiled_step, tiny_train_config


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama"])
def test_sampler_logprobs_equal_trainer_logprobs(family):
    config = tiny_test_config(family)
    model = init_model(config, seed=3)
    b = sampled_batch(model, rows=3)
    graphdef, params = nnx.split(model)
    logp, _ = jax.jit(token_logprobs, static_argnums=0)(
        graphdef, params, b.tokens, b.positions, b.segment_ids
    )
    live = b.loss_mask > 0
    np.testing.assert_allclose(np.asarray(logp)[live], b.old_logp[live], atol=1e-5, rtol=0)


def test_step_mismatch_metric_is_zero_for_fresh_samples():
    """Synchronous mode: sample with the state's own parameters, then step on those samples."""
    config = tiny_train_config(rows=4, microbatches=1, horizon=48)
    mesh, step, sharding = compiled_step(config, (1, 1, 1))
    graphdef, state, _, _ = init_train_state(config, mesh)
    batch = sampled_batch(nnx.merge(graphdef, state.params), rows=4)
    _, metrics = step(state, put_global(split_microbatches(batch, 1), sharding))
    assert float(metrics["logp_mismatch_max"]) < 1e-5
    assert float(metrics["mismatch_k3"]) < 1e-9
    np.testing.assert_allclose(float(metrics["ratio_mean"]), 1.0, atol=1e-5)
    assert float(metrics["clip_low"]) == 0 and float(metrics["clip_high"]) == 0


def sampled_batch(model, rows):
    config = model.config
    rng = np.random.default_rng(0)
    prompts = [rng.integers(3, config.vocab_size, size=n).tolist() for n in (3, 7, 5, 2)]
    batch = generate(model, prompts, max_new_tokens=12, temperature=1.0, seed=1, stop_tokens=(2,))
    # each sampled row twice in a group; rewards vary so no group is dropped
    lengths = [int(n) for n in batch.lengths]
    rollouts = synthetic_rollouts(
        prompts, [[batch.tokens[i, :n]] * 2 for i, n in enumerate(lengths)],
        np.tile(np.array([0.0, 1.0], np.float32), (len(prompts), 1)),
        logprobs=[[batch.model_logprobs[i, :n]] * 2 for i, n in enumerate(lengths)])
    builder = BatchBuilder(GRPOConfig(rows=rows, horizon=48, max_staleness=0), len(prompts))
    builder.offer(rollouts, step=0)
    b = jax.tree.map(lambda a: a[0], builder.take(0).batch)  # [R, L]: rows shared
    assert not builder.pending and b.segment_ids.max() >= 2
    assert b.loss_mask.sum() == 2 * batch.lengths.sum()
    return b
