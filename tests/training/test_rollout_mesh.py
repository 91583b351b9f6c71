"""A rollout mesh of its own (`mesh.rollout_devices`): the sampler on
the last devices, the train step on the others, the weights moved by one resharding transfer."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.model import partitioning
from jaxopt_rl.training.config import MeshConfig
from jaxopt_rl.training.mesh import meshes_from_config
from jaxopt_rl.training.rollout_source import Weights
from jaxopt_rl.training.transfer import WeightTransfer

ROOT = Path(__file__).resolve().parents[2]


def test_the_meshes_split_the_devices_and_errors_name_the_key():
    devices = jax.devices()
    assert len(devices) == 8  # the test session's fake CPU devices
    train, rollout = meshes_from_config(MeshConfig(rollout_devices=3))
    assert list(train.devices.flat) == devices[:5] and list(rollout.devices.flat) == devices[5:]
    assert dict(rollout.shape) == {"data": 3, "fsdp": 1, "tensor": 1}
    same = meshes_from_config(MeshConfig())
    assert same[0] is same[1] and same[0].devices.size == 8
    for config, message in ((MeshConfig(rollout_devices=8), "leaves no device"),
                            (MeshConfig(tensor=2, rollout_devices=3), "cannot be split"),
                            (MeshConfig(fsdp=4, rollout_devices=2), "do not fit")):
        with pytest.raises(ConfigError, match=rf"mesh\.rollout_devices: .*{message}"):
            meshes_from_config(config)
    with pytest.raises(ConfigError, match="rollout_devices"):
        MeshConfig(rollout_devices=-1)


def test_weights_move_to_the_rollout_mesh_device_to_device_and_count_their_bytes():
    train, rollout = meshes_from_config(MeshConfig(rollout_devices=4))
    params = {"w": jnp.arange(64.0, dtype=jnp.float32).reshape(8, 8), "b": jnp.ones(8)}
    params = jax.device_put(params, jax.sharding.NamedSharding(train, jax.sharding.PartitionSpec()))
    shardings = jax.tree.map(lambda _: jax.sharding.NamedSharding(
        rollout, jax.sharding.PartitionSpec()), params)
    with jax.transfer_guard("disallow"):  # an explicit transfer: allowed; no implicit one
        weights = Weights(params, 0, WeightTransfer(train, rollout, shardings))
    moved, version = weights.get()
    assert version == 0 and weights.transferred_bytes == (64 + 8) * 4
    for leaf, source in zip(jax.tree.leaves(moved), jax.tree.leaves(params)):
        assert leaf.sharding.device_set == set(rollout.devices.flat)
        np.testing.assert_array_equal(np.asarray(leaf), np.asarray(source))
    colocated = Weights(params, 0)  # the training mesh's own copy: nothing moves between meshes
    assert colocated.transferred_bytes == 0
    assert jax.tree.leaves(colocated.get()[0])[0].sharding.device_set == set(train.devices.flat)


def test_the_partition_rules_give_the_rollout_mesh_its_shardings():
    from jaxopt_rl.training.state import init_train_state
    from tests.training.helpers import tiny_train_config

    config = tiny_train_config()
    train, rollout = meshes_from_config(MeshConfig(fsdp=2, rollout_devices=4), jax.devices()[:6])
    _, state, _, _ = init_train_state(config, train)
    shardings = partitioning.param_shardings(state.params, rollout)
    for sharding in jax.tree.leaves(shardings, is_leaf=lambda x: hasattr(x, "mesh")):
        assert sharding.mesh is rollout


def _loop_run(out: Path, devices: int, *overrides: str) -> list[dict]:
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    env["LOOP_DRIVER_DEVICES"] = str(devices)
    small = ["env=standard_rlvr", "steps=3", "rollout.max_new_tokens=16",
             "rollout.group_size=2", "rollout.prompts_per_call=1", "loop.prompts_per_step=1",
             "loop.max_groups_per_step=40", "grpo.rows=2", "grpo.horizon=128",
             "checkpoint.every=3", "checkpoint.async_save=false", "loop.mode=sync",
             "loop.log_rollouts=true"]
    done = subprocess.run([sys.executable, str(ROOT / "tests/training/loop_driver.py"),
                           str(out), "0", *small, *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-2000:]
    return [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]


@pytest.mark.slow
def test_a_run_on_two_meshes_equals_the_same_run_on_one_device(tmp_path):
    """Train on device 0 and sample on device 1: every computation is the one-device run's, on
    another device, so the rollouts, losses and parameters are bitwise the same; the weights
    moved once per step, as many bytes as the parameters."""
    one = _loop_run(tmp_path / "one", 1)
    two = _loop_run(tmp_path / "two", 2, "mesh.rollout_devices=1")
    keys = ("loss", "pg_loss", "param_norm", "grad_norm", "reward/mean")
    assert [[r[k] for k in keys] for r in two] == [[r[k] for k in keys] for r in one]
    def texts(run):
        lines = (tmp_path / run / "rollouts.jsonl").read_text().splitlines()
        return [json.loads(line)["text"] for line in lines]

    assert texts("two") == texts("one")
    param_mb = two[0]["weights/transfer_mb"]
    assert param_mb > 1 and all(r["weights/transfer_mb"] == param_mb for r in two)
    assert "weights/transfer_mb" not in one[0]
    # sync: the phases run in turn, so they add up to at most the wall time
    assert all(0 < r["time/overlap"] <= 1 for r in one + two)


@pytest.mark.slow
@pytest.mark.parametrize("devices, mesh", [(1, []), (2, ["mesh.rollout_devices=1"])],
                         ids=["one mesh", "a rollout mesh of its own"])
def test_async_with_one_step_of_queue_takes_the_sync_runs_first_step(tmp_path, devices, mesh):
    """K = 1, one worker and a queue of one step: the first step's groups are the sync run's
    (the same prompts, seeds and version-0 weights), so are the parameters after it, bitwise."""
    from tests.training.test_loop import _final_state
    from tests.training.test_pinned_run import state_digest

    one_step = ["steps=1", "checkpoint.every=1", "loop.weight_sync_every=1", *mesh]
    sync = _loop_run(tmp_path / "sync", devices, *one_step)
    queued = _loop_run(tmp_path / "async", devices, *one_step, "loop.mode=async",
                       "loop.workers=1", "loop.queue_size=1")
    keys = ("loss", "pg_loss", "param_norm", "grad_norm", "reward/mean")
    assert [[r[k] for k in keys] for r in queued] == [[r[k] for k in keys] for r in sync]

    def first_step_texts(run):
        lines = (tmp_path / run / "rollouts.jsonl").read_text().splitlines()
        return [r["text"] for r in map(json.loads, lines) if r["step"] == 1]

    # every group that arrived for step 1 (a group without signal, then one with it), alike
    assert first_step_texts("async") == first_step_texts("sync")
    assert (state_digest(_final_state(tmp_path / "async", 1))
            == state_digest(_final_state(tmp_path / "sync", 1)))
