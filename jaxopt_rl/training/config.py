"""`TrainConfig`: one frozen dataclass per component of a training run, loaded from YAML with
``key=value`` overrides (`jaxopt_rl.config` does the typing and names a bad key).

    config = load_train_config("configs/train/tiny_qp_p30.yaml", ["steps=20", "output_dir=/tmp/r"])

``model`` is either a mapping (a `ModelConfig`) or the path of a model YAML
(``configs/model/tiny.yaml``, relative to the current directory or to the train config's
folder); overrides reach into it either way (``model.param_dtype=bfloat16``).

Choices where the paper leaves one: ``eps_low = 0.2`` / ``eps_high = 0.28`` (an asymmetric clip
with the wider upper side, DAPO's values); the learning-rate schedule decays over ``steps``
unless ``optimizer.decay_steps`` says otherwise; global-norm clipping at 1.0; bfloat16
parameters are refused below a learning rate of 1e-4 (updates would round away: train with
float32 parameters and bfloat16 compute instead).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from jaxopt_rl.config import apply_overrides, from_dict, load_yaml, project_path, require
from jaxopt_rl.model.config import ModelConfig
from jaxopt_rl.model.prompt import PromptTemplate
from jaxopt_rl.rollouts.config import RolloutConfig
from jaxopt_rl.training.distributed import DistributedConfig


def _require_finite(config, *names: str) -> None:
    """Refuse an infinite or NaN number in these fields (None stays allowed), naming the key."""
    for name in names:
        value = getattr(config, name)
        require(value is None or math.isfinite(value), name, f"must be finite, got {value}")


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
        _require_finite(self, "learning_rate", "end_lr_ratio", "b1", "b2", "eps", "weight_decay",
                        "max_grad_norm")
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
    # Devices of a rollout mesh of their own (which ones: rollout_layout): the sampler runs
    # there (data-parallel, `tensor` as above), the train step on the others (data/fsdp/tensor
    # above), and the weights move to it by one resharding transfer every
    # loop.weight_sync_every steps. 0: the sampler shares the training mesh (time-sharing).
    # With loop.mode async over several processes, 0 means half of all devices (the paper's
    # 50/50 split): rollouts and training overlap on disjoint devices under one fixed schedule.
    rollout_devices: int = 0
    # (choice) Which devices form the rollout mesh when there are several processes:
    #   processes: the last rollout_devices of jax.devices(), i.e. whole processes (hosts);
    #   spread: the last rollout_devices / process_count local devices of every process
    rollout_layout: Literal["processes", "spread"] = "processes"

    def __post_init__(self) -> None:
        require(self.rollout_devices >= 0, "rollout_devices", "must be >= 0")
        require(self.rollout_layout in ("processes", "spread"), "rollout_layout",
                f"must be 'processes' or 'spread', got {self.rollout_layout!r}")
        sizes = {"data": self.data, "fsdp": self.fsdp, "tensor": self.tensor}
        for name, size in sizes.items():
            require(size == -1 or size >= 1, name, f"must be >= 1 or -1, got {size}")
        require(list(sizes.values()).count(-1) <= 1, "fsdp", "at most one mesh size may be -1")


@dataclass(frozen=True)
class GRPOConfig:
    """The loss and the batch (docs/design/training.md §1-2)."""

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
        # an infinite coefficient would train to a NaN checkpoint and exit 0
        _require_finite(self, "eps_low", "eps_high", "kl_coef", "tis_cap")
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
class LoopConfig:
    """How rollouts and optimizer steps interleave (docs/design/training.md §2)."""

    mode: Literal["async", "sync"] = "async"  # sync: sample -> execute -> score -> step, in turn
    prompts_per_step: int = 3  # groups (with signal) that make one optimizer step
    weight_sync_every: int = 1  # K: optimizer steps between weight copies to the samplers
    queue_size: int = 32  # scored groups queued between workers and trainer (whole calls)
    workers: int = 1  # rollout threads (each samples, then waits on its sandbox calls)
    log_every: int = 1  # optimizer steps between metric lines
    # every sampled rollout (task, completion text, reward, policy version) to OUT/rollouts.jsonl
    log_rollouts: bool = False
    # 0: no bound; else a step stops taking rollout batches once this many groups arrived
    # (sync mode sizes its calls to hit it exactly; async may pass it by a call's prompts - 1)
    max_groups_per_step: int = 0
    when_capped: Literal["fail", "step"] = "fail"  # the bound reached before the step is full:
    #   fail: stop the run (every rollout earns the same reward; never spin);
    #   step: step with the groups that carried a signal (none: a zero gradient), so each
    #   step samples a fixed budget of groups (the demo compares two runs at equal budgets)

    def __post_init__(self) -> None:
        require(self.prompts_per_step >= 1, "prompts_per_step", "must be >= 1")
        require(self.weight_sync_every >= 1, "weight_sync_every", "must be >= 1")
        require(self.queue_size >= 1, "queue_size", "must be >= 1")
        require(self.workers >= 1, "workers", "must be >= 1")
        require(self.log_every >= 1, "log_every", "must be >= 1")
        require(self.max_groups_per_step >= 0, "max_groups_per_step", "must be >= 0")
        require(self.when_capped == "fail" or self.max_groups_per_step >= 1, "when_capped",
                "'step' needs max_groups_per_step >= 1")


@dataclass(frozen=True)
class DataConfig:
    """Which prompts a run trains on."""

    dataset: str = "mini"  # "mini" (DMC-Optim-mini, shipped) or a built data set folder
    split: str | None = "train"  # None: every problem
    problems: tuple[str, ...] = ()  # only these ids (empty: the whole split)
    tests: tuple[str, ...] = ()  # fnmatch patterns of the test ids run (empty: every test)
    seed: int = 0  # the loader's shuffle seed
    # SFT on score tasks (kind: river): copies of each task's reference heuristics in its SFT
    # data, in expected-rank order among those that fit grpo.horizon (1st = best kept);
    # missing entries count 1. E.g. [1, 4]: a rare best and a common second-best heuristic
    # (RiVER's frequency-dominance setting). Empty: one copy of each.
    heuristic_copies: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        require(bool(self.dataset), "dataset", "must not be empty")
        require(all(isinstance(c, int) and c >= 0 for c in self.heuristic_copies),
                "heuristic_copies", f"must be integers >= 0, got {list(self.heuristic_copies)}")


@dataclass(frozen=True)
class SandboxConfig:
    """Where programs run: an embedded pool on this host, or a fleet (`sandbox_cluster.connect`)."""

    urls: tuple[str, ...] = ()  # empty: the embedded pool
    token: str | None = None  # bearer token of the fleet
    workers: int | None = None  # embedded pool slots (None: the pool's default)
    backend: str | None = None  # embedded jail backend (None: the pool's default)


@dataclass(frozen=True)
class CheckpointConfig:
    every: int = 100  # optimizer steps between saves
    keep: int = 3  # how many of the latest checkpoints are kept
    best_metric: str | None = None  # also keep the best checkpoint by this metric
    best_mode: Literal["max", "min"] = "max"  # whether the best metric is the largest
    async_save: bool = True  # write in the background while training continues
    # a resume whose newest checkpoint fails verification against its manifest: "fail" stops
    # naming the bad file and the newest intact checkpoint; "previous" resumes from that one
    on_corrupt: Literal["fail", "previous"] = "fail"

    def __post_init__(self) -> None:
        require(self.every >= 1, "every", "must be >= 1")
        require(self.keep >= 1, "keep", "must be >= 1")


@dataclass(frozen=True)
class TargetConfig:
    """The accelerators a config is sized for: `jaxopt-rl plan` compiles its step and sampler
    for them (names as `jaxopt_rl.planning.hardware.parse_slice` reads them)."""

    topology: str | None = None  # TPU slice, e.g. "v5p-32" (16 chips)
    gpu: str | None = None  # GPU nodes, e.g. "h100x16" (2 nodes of 8)
    prompt_tokens: int = 2048  # prompt length the sampler is planned for (longest expected)

    def __post_init__(self) -> None:
        require(self.prompt_tokens >= 1, "prompt_tokens", "must be >= 1")


@dataclass(frozen=True)
class TrainConfig:
    """A run: the model, its optimizer and mesh, the loss, rollouts, loop, data, sandbox and
    environment, checkpoints; `sft` reads the same file shape (rollout/loop/env/sandbox unused)."""

    model: ModelConfig = field(default_factory=ModelConfig)
    prompt: PromptTemplate = field(default_factory=PromptTemplate)  # how a problem is asked
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    mesh: MeshConfig = field(default_factory=MeshConfig)
    grpo: GRPOConfig = field(default_factory=GRPOConfig)
    rollout: RolloutConfig = field(default_factory=RolloutConfig)
    loop: LoopConfig = field(default_factory=LoopConfig)
    data: DataConfig = field(default_factory=DataConfig)
    sandbox: SandboxConfig = field(default_factory=SandboxConfig)
    distributed: DistributedConfig = field(default_factory=DistributedConfig)
    env: str = "qp_p30"  # reward environment: a name in configs/env/ or a YAML path
    env_overrides: tuple[str, ...] = ()  # key=value applied to the environment
    init_from: str | None = None  # starting weights: a Hugging Face folder (save_pretrained)
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig)
    target: TargetConfig = field(default_factory=TargetConfig)  # where `plan` compiles it for
    output_dir: str = "runs/train"  # metrics.jsonl, tensorboard/, checkpoints/, config.yaml
    steps: int = 100  # optimizer steps of the whole run (a resume continues to this count)
    seed: int = 0  # parameters, sampling and the step's RNG derive from it

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
        # a checkpoint is ranked by the metric line of its step: every save must write one
        require(
            self.checkpoint.best_metric is None
            or self.checkpoint.every % self.loop.log_every == 0,
            "checkpoint.best_metric",
            f"ranks checkpoints by their step's metric line: checkpoint.every="
            f"{self.checkpoint.every} must be a multiple of loop.log_every={self.loop.log_every}",
        )


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
        data = dict(data, model=load_yaml(resolve_beside(model, path)))
    data = apply_overrides(data, overrides)
    if isinstance(data.get("init_from"), str):
        data = dict(data, init_from=str(project_path(data["init_from"])))
    return from_dict(TrainConfig, data)


def resolve_beside(model_path: str, config_path: str | Path | None) -> Path:
    """A file named in a config: as given when it exists, else beside the config file."""
    candidate = Path(model_path)
    if candidate.is_file() or candidate.is_absolute() or config_path is None:
        return candidate
    beside = Path(config_path).parent / candidate
    return beside if beside.is_file() else candidate
