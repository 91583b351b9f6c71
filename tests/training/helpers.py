"""Shared fixtures of the trainer tests: a tiny train config and random packed batches."""

from __future__ import annotations

import functools

import numpy as np

from jaxopt_rl.model.testing import tiny_test_config
from jaxopt_rl.rollouts.batch import RolloutBatch
from jaxopt_rl.rollouts.testing import synthetic_rollouts
from jaxopt_rl.training.batch import BatchBuilder
from jaxopt_rl.training.config import (
    GRPOConfig,
    MeshConfig,
    OptimizerConfig,
    RolloutConfig,
    TrainConfig,
)
from jaxopt_rl.training.mesh import mesh_from_config
from jaxopt_rl.training.state import abstract_train_state, learning_rate_schedule
from jaxopt_rl.training.step import StepSettings, batch_sharding, make_train_step


def tiny_train_config(family: str = "qwen2", **grpo) -> TrainConfig:
    grpo_fields = dict(horizon=32, rows=8, microbatches=2, eps_low=0.2, eps_high=0.28)
    grpo_fields.update(grpo)
    return TrainConfig(
        model=tiny_test_config(family),
        # eps=1e-3: Adam's first steps turn each gradient element into about +-lr whatever its
        # size, so elements whose gradient is within float rounding of zero would make two
        # correct implementations (sharded vs not) differ by ~lr. With eps above that noise the
        # update stays a smooth function of the gradient and parity tests can be tight.
        optimizer=OptimizerConfig(
            learning_rate=1e-3, warmup_steps=1, weight_decay=0.01, eps=1e-3, max_grad_norm=1.0
        ),
        mesh=MeshConfig(data=1, fsdp=-1, tensor=1),
        grpo=GRPOConfig(**grpo_fields),
        rollout=RolloutConfig(max_new_tokens=16),
        steps=10,
    )


def random_rollouts(seed: int, count: int, vocab: int = 128, group_size: int = 4,
                    version: int = 0) -> RolloutBatch:
    """`count` prompts of random tokens, `group_size` completions each, rewards in [0, 1)."""
    rng = np.random.default_rng(seed)
    prompts, completions, logps = [], [], []
    for _ in range(count):
        prompts.append(rng.integers(3, vocab, size=rng.integers(2, 6)).astype(np.int32))
        completions.append([rng.integers(3, vocab, size=rng.integers(1, 10)).astype(np.int32)
                            for _ in range(group_size)])
        logps.append([-rng.random(len(c)).astype(np.float32) * 5 for c in completions[-1]])
    rewards = rng.random((count, group_size)).astype(np.float32)
    return synthetic_rollouts(prompts, completions, rewards, logprobs=logps, version=version,
                              problem_ids=[f"p{seed}-{i}" for i in range(count)])


def random_batch(seed: int, config: TrainConfig):
    """A `[U, R, L]` batch of six random groups, through the trainer's batch builder."""
    builder = BatchBuilder(config.grpo, prompts_per_step=6)
    builder.offer(random_rollouts(seed, 6), step=0)
    return builder.take(0).batch


@functools.cache
def compiled_step(config: TrainConfig, mesh_shape: tuple[int, int, int] = (1, 1, 1),
                  loss: str = "grpo"):
    """``(mesh, step, batch_sharding)`` for a config (built once per session: compiling a step
    is most of a trainer test's time). States come from `init_train_state`, whose compiled
    init is cached the same way, so they match the step's shardings."""
    import jax

    devices = jax.devices()[: int(np.prod(mesh_shape))]
    mesh = mesh_from_config(MeshConfig(*mesh_shape), devices=devices)
    graphdef, _, shardings, tx = abstract_train_state(config, mesh)
    rows = config.grpo.rows // config.grpo.microbatches
    schedule = learning_rate_schedule(config.optimizer, config.steps)
    step = make_train_step(graphdef, tx, StepSettings.from_config(config.grpo, loss), shardings,
                           mesh, rows, learning_rate=schedule)
    return mesh, step, batch_sharding(mesh, rows)
