"""`DemoConfig`: what `jaxopt-rl demo` runs, loaded from `configs/demo.yaml`.

    config = load_demo_config("configs/demo.yaml", ["train.steps=10"], smoke=False)

`train` is one `TrainConfig` shared by both GRPO runs (same problems, tests, G, batch, steps,
learning rate, seed and starting weights); the demo sets only its `env` (`qp_env` for one run,
`baseline_env` for the other) and `output_dir`. `--smoke` applies the `smoke` overrides before
the command line's, so the smoke run is the same pipeline on a handful of steps and problems.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

from jaxopt_rl.config import apply_overrides, from_dict, load_yaml, project_path, require
from jaxopt_rl.training.config import TrainConfig, resolve_beside


@dataclass(frozen=True)
class DemoEvalConfig:
    """The replayed evaluation of the three policies (one shared timing pass)."""

    samples: int = 8  # n completions per problem and policy (pass@1 is their mean)
    temperature: float = 1.0
    max_new_tokens: int = 768
    batch_size: int = 32  # rows per sampler call
    reference_runs: int = 2  # each reference re-executed this many times in the same pass
    held_out_split: str | None = "test"  # also evaluated, for honesty; None: skipped
    held_out_samples: int = 2
    resamples: int = 1000  # bootstrap resamples over problems (95 % intervals)
    seed: int = 0
    # a candidate's run ends at its first failed correctness test: exact for pass@1(p_tau)
    stop_after_failure: bool = False

    def __post_init__(self) -> None:
        require(self.samples >= 1, "samples", "must be >= 1")
        require(math.isfinite(self.temperature) and self.temperature >= 0, "temperature",
                f"must be finite and >= 0 (0: greedy), got {self.temperature}")
        require(self.held_out_samples >= 1, "held_out_samples", "must be >= 1")
        require(self.batch_size >= 1, "batch_size", "must be >= 1")
        require(self.reference_runs >= 1, "reference_runs",
                "must be >= 1 (the evaluation ranks against references timed in its own pass)")
        require(self.resamples >= 100, "resamples", "must be >= 100")


@dataclass(frozen=True)
class DemoConfig:
    train: TrainConfig = field(default_factory=TrainConfig)
    qp_env: str = "qp_p30"
    baseline_env: str = "mc"
    output_dir: str = "runs/demo"
    eval: DemoEvalConfig = field(default_factory=DemoEvalConfig)
    smoke: tuple[str, ...] = ()  # key=value overrides applied by --smoke

    def __post_init__(self) -> None:
        require(bool(self.train.init_from), "train.init_from",
                "the demo starts from a supervised checkpoint (the shipped one: "
                "jaxopt_rl/demo/assets/sft_tiny)")
        require(self.qp_env != self.baseline_env, "baseline_env",
                f"must differ from qp_env ({self.qp_env!r})")


def load_demo_config(path: str | Path, overrides=(), smoke: bool = False) -> DemoConfig:
    return load_with_train(DemoConfig, path, overrides, smoke)


def load_with_train(cls, path: str | Path, overrides=(), smoke: bool = False):
    """A demo config (`cls`) whose `train` is a TrainConfig: its `smoke` overrides (when
    asked), then the command line's; `train.model` read beside the file, `init_from` from the
    project root."""
    data = load_yaml(path)
    if smoke:
        data = apply_overrides(data, list(data.get("smoke", ())))
    data = apply_overrides(data, overrides)
    train = dict(data.get("train") or {})
    if isinstance(train.get("model"), str):
        train["model"] = load_yaml(resolve_beside(train["model"], path))
    if isinstance(train.get("init_from"), str):
        train["init_from"] = str(project_path(train["init_from"]))
    return from_dict(cls, dict(data, train=train))
