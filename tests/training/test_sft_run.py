"""`run_sft` end to end on a one-layer model and two short steps: a step that leaves the
parameters non-finite stops the run before any checkpoint, and `checkpoint.best_metric` is one
of SFT's logged metrics (refused naming the key at step 1 otherwise, kept by it when it is)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from jaxopt_rl import cli
from jaxopt_rl.config import ConfigError
from jaxopt_rl.errors import RunStopped
from jaxopt_rl.training.config import load_train_config
from jaxopt_rl.training.sft import run_sft

ROOT = Path(__file__).resolve().parents[2]
CONFIG = ROOT / "configs/sft/tiny_mini.yaml"
# a one-layer, 64-wide model; one problem (5 of its 6 solutions fit 256 tokens), a row of 256
# tokens per (fake CPU) device: about a second a step
SMALL = ["model.num_layers=1", "model.hidden_size=64", "model.intermediate_size=128",
         "data.problems=[mini-019]", "grpo.rows=8", "grpo.horizon=256",
         "rollout.max_new_tokens=128", "checkpoint.async_save=false", "checkpoint.every=1"]


def _config(out, *overrides):
    return load_train_config(CONFIG, [*SMALL, f"output_dir={out}", *overrides])


def _saved(out):
    folder = out / "checkpoints"
    return sorted(int(p.name) for p in folder.iterdir() if p.name.isdigit()) if folder.is_dir() \
        else []


def test_parameters_that_turn_non_finite_stop_sft_before_a_checkpoint(tmp_path):
    """A learning rate of 1e30 moves every parameter by ~1e30 on the first Adam step, so the
    parameter norm overflows float32: the run stops naming step 1 and saves nothing."""
    out = tmp_path / "run"
    config = _config(out, "steps=2", "optimizer.learning_rate=1e30", "optimizer.warmup_steps=0")
    with pytest.raises(RunStopped, match=r"^step 1: the parameters are no longer finite"):
        run_sft(config, log=lambda line: None)
    assert _saved(out) == [] and not (out / "hf").exists()
    assert not (out / "metrics.jsonl").read_text().strip()  # the step is not logged either


def test_an_unknown_best_metric_stops_sft_at_step_1_naming_the_key(tmp_path, capsys):
    out = tmp_path / "run"
    status = cli.main(["sft", "--config", str(CONFIG), *SMALL, f"output_dir={out}", "steps=3",
                       "checkpoint.every=2", "checkpoint.best_metric=nope"])
    last = capsys.readouterr().err.strip().splitlines()[-1]  # after the progress bar's lines
    assert status == 2
    assert last.startswith("jaxopt-rl sft: config error: checkpoint.best_metric: 'nope' ")
    assert "step 1" in last and "loss" in last and "param_norm" in last
    assert _saved(out) == []


def test_sft_keeps_its_best_checkpoint_by_a_logged_metric(tmp_path):
    out = tmp_path / "run"
    config = _config(out, "steps=3", "checkpoint.keep=1", "checkpoint.best_metric=loss",
                     "checkpoint.best_mode=max")
    with pytest.raises(ConfigError):  # the same config with a name SFT does not log
        run_sft(_config(tmp_path / "other", "steps=1", "checkpoint.best_metric=reward/mean"),
                log=lambda line: None)
    run_sft(config, log=lambda line: None)
    losses = [json.loads(line)["loss"] for line in
              (out / "metrics.jsonl").read_text().splitlines()]
    best = 1 + max(range(3), key=losses.__getitem__)  # the largest loss: not the last step
    assert best != 3 and _saved(out) == [best, 3]
