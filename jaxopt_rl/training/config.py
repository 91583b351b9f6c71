"""`TrainConfig`: one frozen dataclass per component of a training run, loaded from YAML with
``key=value`` overrides (`jaxopt_rl.config` does the typing and names a bad key).

    config = load_train_config("configs/train/tiny_qp_p30.yaml", ["steps=20", "output_dir=/tmp/r"])

``model`` is either a mapping (a `ModelConfig`) or the path of a model YAML
(``configs/model/tiny.yaml``, relative to the current directory or to the train config's
folder); overrides reach into it either way (``model.param_dtype=bfloat16``).

Choices where the spec leaves one: ``eps_low = 0.2`` / ``eps_high = 0.28`` (an asymmetric clip
with the wider upper side, DAPO's values); the learning-rate schedule decays over ``steps``
unless ``optimizer.decay_steps`` says otherwise; global-norm clipping at 1.0; bfloat16
parameters are refused below a learning rate of 1e-4 (updates would round away: train with
float32 parameters and bfloat16 compute instead).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from jaxopt_rl.config import apply_overrides, from_dict, load_yaml, require
from jaxopt_rl.model.config import ModelConfig


@dataclass(frozen=True)
class OptimizerConfig:
    """AdamW with linear warmup, then a constant / cosine / linear schedule, and clipping."""

    learning_rate: float = 1e-6  # peak learning rate (paper: 1e-7 at 7B, RiVER 1e-6)
    warmup_steps: int = 0  # linear warmup; step 0 already uses peak / warmup_steps
    schedule: Literal["constant", "cosine", "linear"] = "constant"  # after the warmup
    decay_steps: int | None = None  # None: the run's `steps`
    end_lr_ratio: float = 0.0  # final learning rate / peak, for cosine and linear
    b1: float = 0.9  # Adam first-moment decay
    b2: float = 0.999  # Adam second-moment decay
    eps: float = 1e-8  # Adam denominator epsilon
    weight_decay: float = 0.0  # decoupled (AdamW), on matrices only (not norms or biases)
    max_grad_norm: float | None = 1.0  # None: no clipping

    def __post_init__(self) -> None:
        require(self.learning_rate > 0, "learning_rate", f"must be > 0, got {self.learning_rate}")
        require(self.warmup_steps >= 0, "warmup_steps", "must be >= 0")
        require(
            self.decay_steps is None or self.decay_steps > 0, "decay_steps", "must be > 0"
        )
        require(0 <= self.end_lr_ratio <= 1, "end_lr_ratio", "must be in [0, 1]")
        require(0 <= self.b1 < 1 and 0 <= self.b2 < 1, "b1", "b1 and b2 must be in [0, 1)")
        require(self.eps > 0, "eps", "must be > 0")
        require(self.weight_decay >= 0, "weight_decay", "must be >= 0")
        require(
            self.max_grad_norm is None or self.max_grad_norm > 0, "max_grad_norm", "must be > 0"
        )


@dataclass(frozen=True)
class MeshConfig:
    """Device mesh sizes along (data, fsdp, tensor); one may be -1 (all remaining devices)."""

    data: int = 1  # replicas (parameters replicated between them)
    fsdp: int = -1  # replicas whose parameters and optimizer state are sharded between them
    tensor: int = 1  # split of heads / MLP width / vocabulary inside a layer

    def __post_init__(self) -> None:
        sizes = {"data": self.data, "fsdp": self.fsdp, "tensor": self.tensor}
        for name, size in sizes.items():
            require(size == -1 or size >= 1, name, f"must be >= 1 or -1, got {size}")
        require(list(sizes.values()).count(-1) <= 1, "fsdp", "at most one mesh size may be -1")


@dataclass(frozen=True)
class GRPOConfig:
    """The loss and the batch (spec training.md §1-2)."""

    eps_low: float = 0.2  # clip the ratio below at 1 - eps_low
    eps_high: float = 0.28  # clip the ratio above at 1 + eps_high (asymmetric: wider)
    horizon: int = 32768  # N: tokens per packed row, the loss's fixed divisor per row
    rows: int = 16  # R: packed rows per optimizer step (the loss divides by R x N)
    microbatches: int = 1  # U: gradient accumulation inside the step
    kl_coef: float = 0.0  # beta of the k3 KL to the initial (reference) policy
    max_staleness: int = 30  # S_max: groups sampled more optimizer steps ago are dropped
    river: bool = False  # rewards are already advantages: no centring
    tis_cap: float | None = None  # truncated IS correction of the sampler mismatch; None: off

    def __post_init__(self) -> None:
        require(0 < self.eps_low < 1, "eps_low", f"must be in (0, 1), got {self.eps_low}")
        require(self.eps_high > 0, "eps_high", f"must be > 0, got {self.eps_high}")
        require(self.horizon >= 2, "horizon", f"must be >= 2, got {self.horizon}")
        require(self.rows >= 1, "rows", f"must be >= 1, got {self.rows}")
        require(
            self.microbatches >= 1 and self.rows % self.microbatches == 0,
            "microbatches",
            f"must divide rows ({self.rows}), got {self.microbatches}",
        )
        require(self.kl_coef >= 0, "kl_coef", "must be >= 0")
        require(self.max_staleness >= 0, "max_staleness", "must be >= 0")
        require(self.tis_cap is None or self.tis_cap >= 1, "tis_cap", "must be >= 1")


@dataclass(frozen=True)
class RolloutConfig:
    """Sampling of the rollouts (the rollout worker and the loop read these)."""

    group_size: int = 16  # G rollouts per prompt
    prompts_per_step: int = 3  # P prompts sampled per optimizer step
    max_new_tokens: int = 1024  # sampler budget; prompt + this must fit in grpo.horizon
    temperature: float = 1.0  # 1.0: the sampled and the trained distributions coincide
    top_p: float | None = None  # None: no nucleus truncation (the paper's setting)
    top_k: int | None = None  # None: no top-k truncation
    mode: Literal["async", "sync"] = "async"  # sync: sample, execute, score, step in turn
    weight_sync_every: int = 1  # K: new weights go to the samplers every K steps
    queue_size: int = 32  # bound of the rollout queue, in groups

    def __post_init__(self) -> None:
        require(self.group_size >= 1, "group_size", "must be >= 1")
        require(self.prompts_per_step >= 1, "prompts_per_step", "must be >= 1")
        require(self.max_new_tokens >= 1, "max_new_tokens", "must be >= 1")
        require(self.temperature > 0, "temperature", "must be > 0 for training")
        require(self.weight_sync_every >= 1, "weight_sync_every", "must be >= 1")
        require(self.queue_size >= 1, "queue_size", "must be >= 1")


@dataclass(frozen=True)
class CheckpointConfig:
    every: int = 100  # optimizer steps between saves
    keep: int = 3  # how many of the latest checkpoints are kept
    best_metric: str | None = None  # also keep the best checkpoint by this metric
    best_mode: Literal["max", "min"] = "max"  # whether the best metric is the largest
    async_save: bool = True  # write in the background while training continues

    def __post_init__(self) -> None:
        require(self.every >= 1, "every", "must be >= 1")
        require(self.keep >= 1, "keep", "must be >= 1")


@dataclass(frozen=True)
class TrainConfig:
    model: ModelConfig = field(default_factory=ModelConfig)
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    mesh: MeshConfig = field(default_factory=MeshConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    output_dir: str = "runs/train"  # metrics.jsonl, tensorboard/, checkpoints/, config.yaml
    steps: int = 100  # optimizer steps of the run
    seed: int = 0  # parameter init and every random stream of the run

    def __post_init__(self) -> None:
        require(self.steps >= 1, "steps", f"must be >= 1, got {self.steps}")
        # bfloat16 keeps 8 bits of mantissa: an AdamW step of ~lr on a weight of ~0.02 rounds
        # away below ~1e-4, so the run would "train" without its weights ever changing.
        require(
            self.model.param_dtype == "float32" or self.optimizer.learning_rate >= 1e-4,
            "model.param_dtype",
            f"bfloat16 parameters cannot hold updates of learning_rate="
            f"{self.optimizer.learning_rate} (they round to zero); keep float32 parameters "
            "and set model.compute_dtype=bfloat16",
        )
        require(
            self.rollout.max_new_tokens < self.grpo.horizon,
            "rollout.max_new_tokens",
            f"{self.rollout.max_new_tokens} leaves no room for a prompt in a row of "
            f"grpo.horizon={self.grpo.horizon} tokens",
        )
        require(bool(self.output_dir), "output_dir", "must not be empty")


# Keys whose change makes a checkpoint unloadable or its optimizer state meaningless: a resume
# with any of them changed fails naming the key (`checkpoints.check_resume_config`).
SHAPE_KEYS = (
    "model.family",
    "model.vocab_size",
    "model.hidden_size",
    "model.intermediate_size",
    "model.num_layers",
    "model.num_heads",
    "model.num_kv_heads",
    "model.head_dim",
    "model.tie_word_embeddings",
    "model.qkv_bias",
    "model.out_bias",
    "model.mlp_bias",
    "model.qk_norm",
    "model.param_dtype",
    "optimizer.max_grad_norm",
)


def load_train_config(path: str | Path | None = None, overrides=()) -> TrainConfig:
    """Load a train config; a string ``model`` is the path of a model YAML (see module doc)."""
    data = load_yaml(path) if path is not None else {}
    model = data.get("model")
    if isinstance(model, str):
        data = dict(data, model=load_yaml(_resolve(model, path)))
    return from_dict(TrainConfig, apply_overrides(data, overrides))


def _resolve(model_path: str, config_path: str | Path | None) -> Path:
    candidate = Path(model_path)
    if candidate.is_file() or candidate.is_absolute() or config_path is None:
        return candidate
    beside = Path(config_path).parent / candidate
    return beside if beside.is_file() else candidate
