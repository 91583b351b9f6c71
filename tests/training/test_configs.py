"""Every shipped train and SFT config loads and validates; a wrong key or value names itself."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.training.config import load_train_config

CONFIGS = Path(__file__).resolve().parents[2] / "configs"
FILES = sorted([*CONFIGS.glob("train/*.yaml"), *CONFIGS.glob("sft/*.yaml")])


def test_the_papers_settings_are_shipped():
    names = {p.stem for p in FILES}
    for name in ("tiny_qp_p30", "tiny_mc", "qwen25_7b_qp_p30", "qwen25_7b_qp_p50",
                 "qwen25_7b_abs_2s", "qwen25_7b_rw_p80", "qwen25_7b_standard_rlvr",
                 "qwen25_7b_mc_mo", "qwen25_32b_qp_p30", "qwen3_8b_river", "tiny_mini"):
        assert name in names, name


@pytest.mark.parametrize("path", FILES, ids=[f"{p.parent.name}/{p.stem}" for p in FILES])
def test_config_loads_and_names_its_command(path):
    config = load_train_config(path, [f"output_dir=/tmp/x-{path.stem}", "steps=3"])
    assert config.steps == 3 and config.output_dir == f"/tmp/x-{path.stem}"
    load_env_config(config.env)  # the environment it names exists
    header = path.read_text().split("\n\n")[0]
    assert "jaxopt-rl " in header or "launch/" in header, "the header states the command"


def test_paper_values_reach_the_dataclasses():
    config = load_train_config(CONFIGS / "train/qwen25_7b_qp_p30.yaml")
    assert (config.rollout.group_size, config.grpo.horizon, config.grpo.max_staleness,
            config.optimizer.learning_rate, config.steps) == (16, 32768, 30, 1e-7, 10000)
    assert config.model.hidden_size == 3584 and config.model.family == "qwen2"
    river = load_train_config(CONFIGS / "train/qwen3_8b_river.yaml")
    assert (river.grpo.kl_coef, river.grpo.river, river.optimizer.learning_rate) == (0.001, True, 1e-6)
    assert load_train_config(CONFIGS / "train/qwen25_32b_qp_p30.yaml").optimizer.learning_rate == 1.4e-7


@pytest.mark.parametrize("override, key", [
    ("rollout.group_sise=4", "rollout.group_sise"),
    ("grpo.rows=0", "rows"),
    ("loop.mode=fast", "loop.mode"),
    ("optimizer.learning_rate=-1", "learning_rate"),
    ("grpo.microbatches=3", "microbatches"),
])
def test_a_wrong_key_or_value_names_it(override, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        load_train_config(CONFIGS / "train/tiny_qp_p30.yaml", [override])


ACCELERATOR = [p for p in FILES if p.parent.name == "train" and not p.stem.startswith("tiny")]


@pytest.mark.parametrize("path", ACCELERATOR, ids=[p.stem for p in ACCELERATOR])
def test_every_accelerator_config_states_the_papers_split(path):
    """Async over a slice's hosts needs a rollout mesh of its own with as many chips as the
    training mesh (the cross-process weight copy maps one onto the other); each accelerator
    config says so itself rather than leaning on the default, for its declared slice."""
    from jaxopt_rl.planning.hardware import parse_slice

    config = load_train_config(path)
    chips = parse_slice(config.target.topology).chips
    assert config.loop.mode == "async"
    assert f"rollout_devices: {chips // 2}" in path.read_text()
    assert config.mesh.rollout_devices * 2 == chips
