"""Per-step metrics of a run: one JSON object per line in ``OUT/metrics.jsonl``, the same
scalars in TensorBoard event files under ``OUT/tensorboard/`` (written by `tensorboardX`), and
Weights & Biases when it is installed and asked for.

    with MetricsWriter(out_dir) as writer:
        writer.write(step, {"loss": 0.12, "reward/mean": 0.4})
        writer.histogram(step, "queue/staleness", staleness_list)

Only process 0 writes (every process may call). Values are converted with ``float`` (device
scalars are fetched; call `write` after dispatching the next step so the fetch overlaps it).
On a resume (``resume_step=N``) lines of steps after N are dropped from ``metrics.jsonl`` (and
``rollouts.jsonl``) and TensorBoard is told to purge events after N, so a re-run step never
appears twice. ``rollouts=True`` also logs every sampled rollout to ``OUT/rollouts.jsonl``
(`write_rollouts`: its prompt, completion text and reward, by the step it was sampled for).
``OUT/groups.jsonl`` (`write_groups`, always) says which loader positions each step trained
(with the policy version that sampled them) and which it dropped: the audit trail of "no prompt
trained twice, none skipped" across resumes. `require_finite` stops a run whose step left the
parameters or the loss non-finite, before anything is saved.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxopt_rl.errors import RunStopped

METRICS_FILE = "metrics.jsonl"
ROLLOUTS_FILE = "rollouts.jsonl"  # `loop.log_rollouts`: one line per sampled rollout
GROUPS_FILE = "groups.jsonl"  # one line per optimizer step: the loader positions it used
TENSORBOARD_DIR = "tensorboard"
_BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_compiles: dict[str, int] = {}


def _count_compile(event: str, duration_s: float, **kwargs: Any) -> None:
    if event == _BACKEND_COMPILE_EVENT:
        name = str(kwargs.get("fun_name", "?"))
        _compiles[name] = _compiles.get(name, 0) + 1


jax.monitoring.register_event_duration_secs_listener(_count_compile)


def compile_counts() -> dict[str, int]:
    """XLA compilations in this process so far, per jitted function name (JAX's own compile
    event): a run whose count still grows after its first steps recompiles every step."""
    return dict(_compiles)


def resident_mb() -> float | None:
    """This process's resident memory in MiB (Linux /proc; None elsewhere)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    import resource

    return pages * resource.getpagesize() / 2**20


def _tensorboardx_writer():
    """`tensorboardX.SummaryWriter`, imported without PyTorch. tensorboardX imports torch, when
    it is installed, only to accept torch tensors as values. We never pass any, and the import
    costs seconds at every run start."""
    if "torch" in sys.modules:
        from tensorboardX import SummaryWriter

        return SummaryWriter
    sys.modules["torch"] = None  # makes `import torch` raise ImportError, as if not installed
    try:
        from tensorboardX import SummaryWriter
    finally:
        del sys.modules["torch"]
    return SummaryWriter


class MetricsWriter:
    def __init__(
        self,
        output_dir: str | Path,
        *,
        resume_step: int | None = None,
        tensorboard: bool = True,
        wandb_project: str | None = None,
        run_config: Mapping[str, Any] | None = None,
        rollouts: bool = False,
    ):
        self.output_dir = Path(output_dir)
        self.active = jax.process_index() == 0
        self._tb = self._wandb = None
        self._file = None
        if not self.active:
            return
        self.output_dir.mkdir(parents=True, exist_ok=True)
        self._file = _open_log(self.output_dir / METRICS_FILE, resume_step)
        self._groups = _open_log(self.output_dir / GROUPS_FILE, resume_step)
        self._rollouts = None
        if rollouts:
            self._rollouts = _open_log(self.output_dir / ROLLOUTS_FILE, resume_step)
        if tensorboard:
            SummaryWriter = _tensorboardx_writer()
            purge = None if resume_step is None else resume_step + 1
            self._tb = SummaryWriter(str(self.output_dir / TENSORBOARD_DIR), purge_step=purge,
                                     flush_secs=30)
        if wandb_project is not None:
            try:
                import wandb
            except ImportError:
                wandb = None  # optional: runs without it
            if wandb is not None:
                self._wandb = wandb.init(project=wandb_project, dir=str(self.output_dir),
                                         config=dict(run_config or {}), resume="allow")

    def write(self, step: int, scalars: Mapping[str, Any]) -> dict[str, float]:
        """Log one step's scalars; returns them as floats (non-finite values kept as null)."""
        values = {key: _to_float(value) for key, value in jax.device_get(dict(scalars)).items()}
        if not self.active:
            return values
        record = {"step": int(step), "time": round(time.time(), 3)}
        record.update({k: (v if math.isfinite(v) else None) for k, v in values.items()})
        self._file.write(json.dumps(record) + "\n")
        if self._tb is not None:
            for key, value in values.items():
                if math.isfinite(value):  # undefined this step (e.g. no token trained): a gap
                    self._tb.add_scalar(key, value, global_step=int(step))
        if self._wandb is not None:
            self._wandb.log(values, step=int(step))
        return values

    def write_rollouts(self, step: int, records: Sequence[Mapping[str, Any]]) -> None:
        """One line per rollout sampled for optimizer step `step` (`loop.log_rollouts`)."""
        if self.active and self._rollouts is not None:
            self._rollouts.write("".join(json.dumps({"step": int(step), **record}) + "\n"
                                         for record in records))

    def write_groups(self, step: int, trained: Sequence[tuple[int, int]],
                     dropped: Sequence[int], stale: Sequence[int]) -> None:
        """Step `step`'s groups: `(position, policy version)` of each trained group, and the
        positions dropped while it collected (no signal, undefined) or grown stale."""
        if self.active:
            self._groups.write(json.dumps({
                "step": int(step), "trained": [[int(p), int(v)] for p, v in trained],
                "dropped": [int(p) for p in dropped], "stale": [int(p) for p in stale]}) + "\n")

    def histogram(self, step: int, tag: str, values: Sequence[float]) -> None:
        if self.active and self._tb is not None and len(values):
            self._tb.add_histogram(tag, np.asarray(values, np.float64), global_step=int(step))

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()
        if self._tb is not None:
            self._tb.flush()

    def close(self) -> None:
        for name in ("_file", "_rollouts", "_groups"):
            if getattr(self, name, None) is not None:
                getattr(self, name).close()
                setattr(self, name, None)
        if self._tb is not None:
            self._tb.close()
            self._tb = None
        if self._wandb is not None:
            self._wandb.finish()
            self._wandb = None

    def __enter__(self) -> MetricsWriter:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def require_finite(metrics: Mapping[str, float], step: int) -> None:
    """Stop the run when step `step` left the parameters or the loss non-finite."""
    if not (math.isfinite(metrics["param_norm"]) and math.isfinite(metrics["loss"])):
        raise RunStopped(
            f"step {step}: the parameters are no longer finite (param_norm "
            f"{metrics['param_norm']}, loss {metrics['loss']}, grad_norm {metrics['grad_norm']}); "
            "this step was not checkpointed; lower optimizer.learning_rate or check the batch")


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``OUT/metrics.jsonl`` (for tests, summaries and plots)."""
    path = Path(output_dir) / METRICS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _to_float(value: Any) -> float:
    array = np.asarray(value)
    if array.size != 1:
        raise ValueError(f"metrics are scalars; got shape {array.shape}")
    return float(array.reshape(()))


def read_rollouts(output_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``OUT/rollouts.jsonl`` (a run with `loop.log_rollouts`)."""
    path = Path(output_dir) / ROLLOUTS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def read_groups(output_dir: str | Path) -> list[dict[str, Any]]:
    """The records of ``OUT/groups.jsonl``: per step, positions trained, dropped and stale."""
    path = Path(output_dir) / GROUPS_FILE
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _open_log(path: Path, resume_step: int | None):
    """A JSON-lines log opened for appending: on a resume the lines of steps after it are
    dropped (they are re-run), a fresh run starts a fresh log."""
    if resume_step is not None and path.exists():
        _truncate_after(path, resume_step)
    elif resume_step is None and path.exists():
        path.unlink()
    return path.open("a", buffering=1)


def _truncate_after(path: Path, step: int) -> None:
    """Keep the lines of steps <= `step`. A run killed mid-write leaves its last line torn:
    that line (of a step after the checkpoint, since the checkpoint follows it) is dropped; a
    torn line anywhere else is damage, and refused with its line number."""
    lines = [line for line in path.read_text().splitlines() if line.strip()]
    kept = []
    for number, line in enumerate(lines, 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            if number == len(lines):
                break
            raise ValueError(f"{path}:{number}: not a JSON line; the log is damaged before "
                             "its end (move it aside to resume)") from None
        if record.get("step", -1) <= step:
            kept.append(line)
    path.write_text("".join(line + "\n" for line in kept))
