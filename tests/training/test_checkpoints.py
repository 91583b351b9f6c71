"""Orbax checkpoints: save on a 2x2x2 mesh and restore on 1x8 and on one device (same values,
new layout), keep-last-N plus best-by-metric, resume detection, shape-key changes refused."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import jax
import numpy as np
import pytest

from jaxopt_rl.config import ConfigError, to_dict
from jaxopt_rl.training.checkpoints import (
    Checkpointer,
    best_metric,
    check_resume_config,
    find_resume,
    resume_message,
)
from jaxopt_rl.training.config import CheckpointConfig, MeshConfig
from jaxopt_rl.training.mesh import mesh_from_config
from jaxopt_rl.training.state import abstract_train_state, init_train_state
from tests.training.helpers import tiny_train_config


def leaves(state):
    return [np.asarray(x) for x in jax.tree.leaves(state)]


def test_save_on_2x2x2_restore_on_1x8_and_one_device(tmp_path):
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(2, 2, 2))
    _, state, _, _ = init_train_state(config, mesh)
    state = state.replace(step=state.step + 5)
    ckpt = Checkpointer(tmp_path, CheckpointConfig(keep=2))
    ckpt.save(state, data={"next_index": 17}, config=to_dict(config))
    ckpt.wait()
    want = leaves(state)
    for target_mesh in (mesh_from_config(MeshConfig(1, 8, 1)),
                        mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])):
        _, target, shardings, _ = abstract_train_state(config, target_mesh)
        restored = Checkpointer(tmp_path, CheckpointConfig(keep=2)).restore(target)
        assert restored.step == 5 and restored.data == {"next_index": 17}
        assert restored.config["model"]["hidden_size"] == config.model.hidden_size
        for got, expected in zip(leaves(restored.state), want, strict=True):
            np.testing.assert_array_equal(got, expected)
        for leaf, sharding in zip(jax.tree.leaves(restored.state), jax.tree.leaves(shardings),
                                  strict=True):
            assert leaf.sharding.is_equivalent_to(sharding, leaf.ndim)
    ckpt.close()


def test_keep_last_n_plus_best(tmp_path):
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, state, _, _ = init_train_state(config, mesh)
    ckpt = Checkpointer(tmp_path, CheckpointConfig(keep=2, best_metric="reward", best_mode="max"))
    rewards = {1: 0.1, 2: 0.9, 3: 0.2, 4: 0.3, 5: 0.25}
    for step, reward in rewards.items():
        ckpt.save(state.replace(step=state.step + step), data={}, config={},
                  metrics={"reward": reward})
    ckpt.wait()
    assert ckpt.all_steps() == [2, 4, 5]
    assert ckpt.best_step() == 2 and ckpt.latest_step() == 5
    with pytest.raises(ConfigError, match=r"^checkpoint\.best_metric: 'reward' .*: loss$"):
        ckpt.save(state.replace(step=state.step + 6), data={}, config={}, metrics={"loss": 1.0})
    ckpt.close()
    assert find_resume(tmp_path) == (5, (tmp_path / "checkpoints" / "5").absolute(), None)
    assert resume_message(5, tmp_path / "checkpoints" / "5").startswith("resumed from step 5 of ")


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize("mode", ["max", "min"])
def test_a_step_without_a_finite_best_metric_is_never_kept_as_the_best(tmp_path, mode, value):
    """A window whose rewards were all undefined logs reward/mean NaN; an overflow logs inf.
    Such a step must not displace a real best (NaN compares false both ways, so Orbax's ranking
    of it was arbitrary; inf would win a max)."""
    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(1, 1, 1), devices=jax.devices()[:1])
    _, state, _, _ = init_train_state(config, mesh)
    ckpt = Checkpointer(tmp_path, CheckpointConfig(keep=1, best_metric="r", best_mode=mode))
    good = 0.9 if mode == "max" else 0.1
    for step, reward in {1: 0.5, 2: good, 3: value, 4: 0.5}.items():
        ckpt.save(state.replace(step=state.step + step), data={}, config={},
                  metrics={"r": reward})
    ckpt.wait()
    assert ckpt.best_step() == 2 and ckpt.all_steps() == [2, 4]
    ckpt.close()


def test_a_best_metric_the_run_does_not_log_is_a_config_error_naming_what_it_logs():
    config = CheckpointConfig(best_metric="nope")
    with pytest.raises(ConfigError) as err:
        best_metric(config, {"loss": 2.0, "grad_norm": 1.0}, 1)
    message = str(err.value)
    assert message.startswith("checkpoint.best_metric: 'nope' ")
    assert message.endswith("its metrics: grad_norm, loss")
    with pytest.raises(ConfigError, match=r"^checkpoint\.best_metric: 'nope' .*no metrics"):
        best_metric(config, None, 1)
    assert best_metric(CheckpointConfig(best_metric="loss"), {"loss": 2, "x": 1.0}, 1) == {
        "loss": 2.0}
    assert best_metric(CheckpointConfig(), {"loss": 2.0}, 1) is None


def test_no_checkpoint_no_resume(tmp_path):
    assert find_resume(tmp_path) is None
    (tmp_path / "checkpoints").mkdir()
    (tmp_path / "checkpoints" / "3.orbax-checkpoint-tmp-1").mkdir()  # an unfinished save
    assert find_resume(tmp_path) is None


def test_resume_with_a_changed_shape_key_fails_naming_it():
    config = tiny_train_config()
    saved = to_dict(config)
    check_resume_config(saved, to_dict(dataclasses.replace(config, steps=999)))  # not a shape
    wider = dataclasses.replace(config, model=config.model.replace(hidden_size=128))
    with pytest.raises(ConfigError, match=r"^model.hidden_size: .* written with 64 .* has 128"):
        check_resume_config(saved, to_dict(wider))
    bf16 = dataclasses.replace(config, model=config.model.replace(param_dtype="bfloat16"))
    with pytest.raises(ConfigError, match=r"model\.param_dtype"):
        check_resume_config(saved, to_dict(bf16))
    # the KL's frozen reference is part of the state: on <-> off cannot resume, a new beta can
    with_kl = dataclasses.replace(config, grpo=dataclasses.replace(config.grpo, kl_coef=0.1))
    with pytest.raises(ConfigError, match=r"^grpo.kl_coef: .* written with 0.0 .* has 0.1"):
        check_resume_config(saved, to_dict(with_kl))
    stronger = dataclasses.replace(config, grpo=dataclasses.replace(config.grpo, kl_coef=0.2))
    check_resume_config(to_dict(with_kl), to_dict(stronger))


def test_export_writes_a_hugging_face_folder_with_the_checkpoint_params(tmp_path):
    from flax import nnx

    from jaxopt_rl.cli import main
    from jaxopt_rl.model import load_pretrained

    config = tiny_train_config()
    mesh = mesh_from_config(MeshConfig(2, 2, 2))
    _, state, _, _ = init_train_state(config, mesh)
    ckpt = Checkpointer(tmp_path / "run", CheckpointConfig())
    ckpt.save(state.replace(step=state.step + 7), data={}, config=to_dict(config))
    ckpt.close()
    assert main(["export", str(tmp_path / "run" / "checkpoints" / "7"), str(tmp_path / "hf")]) == 0
    model = load_pretrained(tmp_path / "hf")
    assert model.config.hidden_size == config.model.hidden_size
    want = jax.tree.leaves(state.params)
    got = jax.tree.leaves(nnx.state(model, nnx.Param))
    for a, b in zip(got, want, strict=True):
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    # the folder loads as a whole policy: the run's tokenizer (no init_from: the project's own)
    shipped = Path(__file__).parents[2] / "jaxopt_rl/model/assets/tokenizer.json"
    assert (tmp_path / "hf" / "tokenizer.json").read_bytes() == shipped.read_bytes()
    assert main(["export", str(tmp_path / "nothing"), str(tmp_path / "hf2")]) == 2


def test_resume_continues_bitwise(tmp_path):
    """4 steps straight == 2 steps, save, restore into a fresh target, 2 more steps (bitwise):
    optimizer moments, step count and RNG all come back, and an asynchronous save is safe
    against the next step donating the state it saved."""
    from jaxopt_rl.training.mesh import put_global
    from tests.training.helpers import compiled_step, random_batch

    config = tiny_train_config()
    mesh, step, sharding = compiled_step(config, (1, 1, 1))
    _, state, _, _ = init_train_state(config, mesh)
    batches = [put_global(random_batch(seed, config), sharding) for seed in range(4)]
    for batch in batches[:2]:
        state, _ = step(state, batch)
    ckpt = Checkpointer(tmp_path, CheckpointConfig())
    ckpt.save(state, data={"next_index": 2}, config=to_dict(config))
    straight = state  # stepping at once donates the saved buffers while the write goes on
    for batch in batches[2:]:
        straight, _ = step(straight, batch)
    straight = leaves(straight)
    ckpt.wait()

    _, target, _, _ = abstract_train_state(config, mesh)
    restored = Checkpointer(tmp_path, CheckpointConfig()).restore(target)
    assert restored.step == 2 and restored.data == {"next_index": 2}
    resumed = restored.state
    for batch in batches[2:]:
        resumed, _ = step(resumed, batch)
    assert int(resumed.step) == 4
    for got, want in zip(leaves(resumed), straight, strict=True):
        np.testing.assert_array_equal(got, want)
    ckpt.close()
