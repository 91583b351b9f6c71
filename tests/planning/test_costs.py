"""The model's own FLOP count (`planning.costs`) against independent counts: attention pairs by
brute force, and the whole train step against XLA's cost analysis of a program with no loop
(unrolled layers, dense attention, whole-row log-probs, one microbatch), where XLA counts every
operation once and so exactly; elementwise work (norms, softmax, the optimizer) is what XLA
counts beyond our matrix products, a few percent at these widths."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_rl.model.config import ModelConfig
from jaxopt_rl.planning import costs
from jaxopt_rl.training.config import (
    GRPOConfig,
    MeshConfig,
    OptimizerConfig,
    RolloutConfig,
    TrainConfig,
)
from jaxopt_rl.training.mesh import mesh_from_config
from jaxopt_rl.training.packing import PackedBatch
from jaxopt_rl.training.state import abstract_train_state
from jaxopt_rl.training.step import StepSettings, batch_sharding, make_train_step


@pytest.mark.parametrize("horizon,trajectory", [(10, 3), (10, 10), (7, 20), (64, 5), (1, 1)])
def test_attention_pairs_count_every_pair_once(horizon, trajectory):
    rows = 3
    segment = np.arange(horizon) // trajectory  # trajectories packed end to end
    real = sum(1 for q in range(horizon) for k in range(q + 1) if segment[q] == segment[k])
    causal = sum(1 for q in range(horizon) for k in range(q + 1))
    assert costs.attention_pairs(rows, horizon, trajectory) == (rows * real, rows * causal)


def test_matmul_params_are_the_parameters_of_the_products():
    config = ModelConfig(family="qwen2", vocab_size=100, hidden_size=16, intermediate_size=40,
                         num_layers=3, num_heads=4, num_kv_heads=2, tie_word_embeddings=False)
    per_layer, unembed = costs.matmul_params(config)
    biases = 16 + 2 * 8  # q, k, v biases
    norms = 2 * 16
    embeddings = 2 * 100 * 16
    assert 3 * per_layer + unembed == config.num_params - 3 * (biases + norms) - 16 - 100 * 16
    assert embeddings - 100 * 16 == unembed


def test_train_step_flops_agree_with_xla_on_a_loop_free_program():
    model = ModelConfig(family="qwen2", vocab_size=2048, hidden_size=256, intermediate_size=1024,
                        num_layers=2, num_heads=4, num_kv_heads=2, attention="dense",
                        remat="none", scan_layers=False, logprob_chunk=0).for_platform("cpu")
    config = TrainConfig(model=model, optimizer=OptimizerConfig(learning_rate=1e-3),
                         mesh=MeshConfig(data=1, fsdp=1, tensor=1),
                         grpo=GRPOConfig(horizon=256, rows=4, microbatches=1),
                         rollout=RolloutConfig(max_new_tokens=64))
    mesh = mesh_from_config(config.mesh, devices=jax.devices()[:1])
    graphdef, abstract, shardings, tx = abstract_train_state(config, mesh)
    step = make_train_step(graphdef, tx, StepSettings.from_config(config.grpo), shardings, mesh,
                           4)
    sharding = batch_sharding(mesh, 4)
    ints = jax.ShapeDtypeStruct((1, 4, 256), jnp.int32, sharding=sharding)
    floats = jax.ShapeDtypeStruct((1, 4, 256), jnp.float32, sharding=sharding)
    compiled = step.lower(abstract, PackedBatch(ints, ints, ints, floats, floats, floats)).compile()
    analysis = compiled.cost_analysis()
    xla_flops = float((analysis[0] if isinstance(analysis, list) else analysis)["flops"])
    ours = costs.train_step_cost(model, rows=4, horizon=256, trajectory=256, chips=1)
    # the dense kernel computes every (query, key) pair: executed >= model; XLA adds the
    # elementwise work on top of our products
    assert ours.executed_flops > ours.model_flops
    assert 1.0 <= xla_flops / ours.executed_flops <= 1.08, (xla_flops, ours.executed_flops)
