"""Train state: the learning-rate schedule against its formula, and the shardings a state is
born with (moments follow their parameter, counters replicated), on the 2x2x2 mesh."""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from jaxopt_rl.model import partitioning
from jaxopt_rl.training.config import MeshConfig, OptimizerConfig
from jaxopt_rl.training.mesh import mesh_from_config
from jaxopt_rl.training.state import abstract_train_state, learning_rate_schedule
from tests.training.helpers import tiny_train_config


def schedule_loop(kind, peak, warmup, total, end, step):
    lr = peak * (min(1.0, (step + 1) / warmup) if warmup else 1.0)
    t = min(max((step - warmup) / max(total - warmup, 1), 0.0), 1.0)
    if kind == "cosine":
        return lr * (end + (1 - end) * 0.5 * (1 + math.cos(math.pi * t)))
    if kind == "linear":
        return lr * (1 - (1 - end) * t)
    return lr


@pytest.mark.parametrize("kind", ["constant", "cosine", "linear"])
@pytest.mark.parametrize("warmup", [0, 5])
def test_schedule_matches_formula(kind, warmup):
    config = OptimizerConfig(learning_rate=2e-3, warmup_steps=warmup, schedule=kind,
                             end_lr_ratio=0.1)
    schedule = learning_rate_schedule(config, steps=50)
    for step in (0, 1, 4, 5, 6, 20, 49, 50, 80):
        want = schedule_loop(kind, 2e-3, warmup, 50, 0.1, step)
        np.testing.assert_allclose(float(schedule(step)), want, rtol=1e-5, err_msg=str(step))


def test_state_is_laid_out_by_the_partition_rules():
    config = tiny_train_config(kl_coef=0.1)
    mesh = mesh_from_config(MeshConfig(2, 2, 2))
    _, abstract, shardings, _ = abstract_train_state(config, mesh)
    want = partitioning.param_shardings(abstract.params, mesh)
    want_leaves = jax.tree.leaves(want)
    assert any(not s.is_fully_replicated for s in want_leaves)
    assert jax.tree.leaves(shardings.params) == want_leaves
    assert jax.tree.leaves(shardings.ref_params) == want_leaves
    # AdamW's moments (mu, nu) follow their parameter; counters are replicated.
    by_param = dict(jax.tree_util.tree_flatten_with_path(want)[0])
    paths = jax.tree_util.tree_flatten_with_path(abstract.opt_state)[0]
    opt_shardings = jax.tree.leaves(shardings.opt_state)
    moments = 0
    for (path, leaf), sharding in zip(paths, opt_shardings, strict=True):
        names = [getattr(k, "name", None) for k in path]
        if "mu" in names or "nu" in names:
            moments += 1
            at = names.index("mu") if "mu" in names else names.index("nu")
            assert sharding == by_param[tuple(path[at + 1 :])], path
        else:
            assert leaf.ndim == 0 and sharding.is_fully_replicated
    assert moments == 2 * len(want_leaves)
    assert shardings.step.is_fully_replicated and shardings.rng.is_fully_replicated
    for leaf in jax.tree.leaves(abstract):
        assert isinstance(leaf, jax.ShapeDtypeStruct) and leaf.sharding is not None
