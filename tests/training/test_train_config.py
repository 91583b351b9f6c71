"""TrainConfig: loads from YAML with a model path or an inline model, key=value overrides reach
every section, bad keys and values fail naming the key; docs/config.md is current."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.training.config import TrainConfig, load_train_config

ROOT = Path(__file__).resolve().parents[2]


def write(tmp_path, text):
    path = tmp_path / "train.yaml"
    path.write_text(text)
    return path


def test_model_path_and_overrides(tmp_path):
    path = write(tmp_path, f"model: {ROOT / 'configs/model/tiny.yaml'}\ngrpo:\n  rows: 4\n"
                           "  horizon: 2048\nrollout:\n  max_new_tokens: 512\n")
    config = load_train_config(path, ["steps=20", "output_dir=/tmp/x",
                                      "model.compute_dtype=bfloat16",
                                      "optimizer.learning_rate=1e-6", "grpo.tis_cap=2"])
    assert config.steps == 20 and config.output_dir == "/tmp/x"
    assert config.model.hidden_size == 256 and config.model.compute_dtype == "bfloat16"
    assert config.optimizer.learning_rate == 1e-6 and config.grpo.tis_cap == 2.0
    assert config.grpo.rows == 4


def test_model_path_relative_to_the_config_file(tmp_path):
    (tmp_path / "m.yaml").write_text("hidden_size: 64\nnum_heads: 4\nnum_kv_heads: 2\n")
    path = write(tmp_path, "model: m.yaml\n")
    assert load_train_config(path).model.hidden_size == 64


def test_defaults_load():
    assert load_train_config() == TrainConfig()


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["grpo.rowz=3"], r"grpo.rowz: unknown key; did you mean rows"),
        (["grpo.microbatches=3"], r"grpo.microbatches: must divide rows \(16\)"),
        (["grpo.eps_low=1.5"], r"grpo.eps_low: must be in \(0, 1\)"),
        (["optimizer.schedule=exp"], r"optimizer.schedule: 'exp' is not one of"),
        (["steps=0"], r"steps: must be >= 1"),
        (["mesh.data=-1"], r"mesh.fsdp: at most one mesh size may be -1"),
        (["rollout.max_new_tokens=40000"], r"rollout.max_new_tokens: 40000 leaves no room"),
        (["model.num_kv_heads=3"], r"model.num_kv_heads: must divide num_heads"),
        (["checkpoint.best_mode=best"], r"checkpoint.best_mode: 'best' is not one of"),
        # a save between two metric lines would have nothing to be ranked by
        (["checkpoint.best_metric=loss", "checkpoint.every=3", "loop.log_every=2"],
         r"checkpoint.best_metric: ranks checkpoints .*checkpoint.every=3 must be a multiple of "
         r"loop.log_every=2"),
        (["model.param_dtype=bfloat16"], r"model.param_dtype: bfloat16 parameters cannot hold"),
        # an infinite coefficient once ran to exit 0 and saved a NaN checkpoint
        (["grpo.kl_coef=.inf"], r"grpo.kl_coef: must be finite, got inf"),
        (["grpo.eps_high=.inf"], r"grpo.eps_high: must be finite"),
        (["grpo.tis_cap=.inf"], r"grpo.tis_cap: must be finite"),
        (["optimizer.learning_rate=.inf"], r"optimizer.learning_rate: must be finite"),
        (["optimizer.max_grad_norm=.nan"], r"optimizer.max_grad_norm: must be finite"),
    ],
)
def test_bad_values_name_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_train_config(None, overrides)


def test_missing_model_file_names_it(tmp_path):
    path = write(tmp_path, "model: no_such_model.yaml\n")
    with pytest.raises(ConfigError, match=r"no_such_model\.yaml"):
        load_train_config(path)
