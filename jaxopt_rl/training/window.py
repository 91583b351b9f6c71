"""What one logging window of a run adds up, and the live progress line.

A window spans the steps between two metric lines. Rollout batches arrive from the rollout
workers with their own phase times (sample, execute, score: summed, so with several workers they can exceed
the wall time: that is the overlap); the trainer adds its own (waiting for rollouts, packing,
the step, the weight copy, the checkpoint) and the batch builder's counts (`Offered`: groups
dropped and why). Rates are over the window's groups and rollouts.

`groups/feedback_resolution` is the mean GFR of the window's groups (docs/design/rewards.md §7: the
order-G Rényi entropy of a group's rewards, 0 when every rollout got the same one), logged for
every environment beside the zero-advantage rate it explains.
"""

from __future__ import annotations

import collections
import time
from pathlib import Path

import numpy as np
from tqdm import tqdm

from jaxopt_rl.rewards.river import group_feedback_resolution
from jaxopt_rl.rollouts.batch import RolloutBatch
from jaxopt_rl.training.metrics import compile_counts, resident_mb

PHASES = ("sample", "execute", "score", "wait_rollouts", "pack", "train", "weight_sync",
          "checkpoint")


class StepWindow:
    def __init__(self, peak_flops: float | None, params: int, rollout_mesh: bool = False):
        self.started = time.perf_counter()
        self.rollout_mesh = rollout_mesh  # weights move to a mesh of their own: log the bytes
        self.transferred_bytes = 0
        self.peak_flops = peak_flops
        self.params = params
        self.seconds = collections.Counter(dict.fromkeys(PHASES, 0.0))
        self.rewards: list[np.ndarray] = []
        self.signals = collections.defaultdict(list)
        self.sandbox = collections.Counter()
        self.staleness: list[int] = []
        self.feedback_resolution: list[float] = []
        self.sampled_tokens = 0
        self.trained_tokens = 0
        self.steps = 0
        # groups seen, and why some trained nothing (the loop counts them)
        self.counts = collections.Counter(dict.fromkeys(
            ("groups", "stale", "zero_signal", "undefined_rollouts", "no_baseline",
             "capped_steps"), 0))

    def add_rollouts(self, rollouts: RolloutBatch, offered) -> None:
        """A rollout batch that arrived, and what the batch builder did with it (`Offered`)."""
        for rewards_G in rollouts.rewards_PG:
            self.rewards.append(rewards_G)
            defined_G = np.isfinite(rewards_G)
            self.feedback_resolution.append(float(group_feedback_resolution(
                np.where(defined_G, rewards_G, 0.0), defined_G)))
        for name, values_PG in rollouts.signals.items():
            self.signals[name].append(np.asarray(values_PG, bool).ravel())
        self.sandbox.update(rollouts.counts)
        for phase, seconds in rollouts.seconds.items():
            self.seconds[phase] += seconds
        self.sampled_tokens += int(rollouts.lengths_PG.sum())
        for name in ("groups", "undefined_rollouts", "no_baseline", "stale", "zero_signal"):
            self.counts[name] += getattr(offered, name)
        self.staleness.extend(offered.staleness)

    def add_weight_sync(self, seconds: float, transferred_bytes: int) -> None:
        self.seconds["weight_sync"] += seconds
        self.transferred_bytes += transferred_bytes

    def add_step(self, trained_tokens: int) -> None:
        self.steps += 1
        self.trained_tokens += trained_tokens

    def scalars(self, metrics: dict, pending_groups: int = 0,
                in_flight_groups: int = 0) -> dict[str, float]:
        """The window's metric line; the queue depth is the caller's when the line is written:
        scored groups waiting for a step, and groups sampled but not yet handed over."""
        counts = self.counts
        wall = max(time.perf_counter() - self.started, 1e-9)
        out = {k: float(v) for k, v in metrics.items()}
        rewards = np.concatenate(self.rewards) if self.rewards else np.zeros(0)
        finite = rewards[np.isfinite(rewards)]
        if self.rollout_mesh:
            out["weights/transfer_mb"] = self.transferred_bytes / 2**20
        out["reward/mean"] = float(finite.mean()) if finite.size else float("nan")
        out["reward/std"] = float(finite.std()) if finite.size else float("nan")
        out["reward/undefined_rate"] = float(np.mean(~np.isfinite(rewards))) if rewards.size else 0.0
        for name in ("c_cor", "c_strict", "g"):
            values = np.concatenate(self.signals[name]) if self.signals[name] else np.zeros(0)
            out[f"pass/{name}"] = float(values.mean()) if values.size else float("nan")
        groups = max(counts["groups"], 1)
        out["groups/zero_advantage_rate"] = counts["zero_signal"] / groups
        out["groups/stale_dropped_rate"] = counts["stale"] / groups
        out["groups/stale_dropped"] = float(counts["stale"])
        out["groups/zero_advantage"] = float(counts["zero_signal"])
        out["groups/no_baseline"] = float(counts["no_baseline"])
        out["rollouts/undefined_dropped"] = float(counts["undefined_rollouts"])
        out["groups/seen"] = float(counts["groups"])
        resolution = [v for v in self.feedback_resolution if np.isfinite(v)]
        out["groups/feedback_resolution"] = (float(np.mean(resolution)) if resolution
                                             else float("nan"))
        out["steps/capped"] = float(counts["capped_steps"])  # stepped short of prompts_per_step
        tests = max(self.sandbox["tests"], 1)
        rollouts = max(sum(len(r) for r in self.rewards), 1)
        out["sandbox/infra_error_rate"] = self.sandbox["infra_error"] / tests
        out["sandbox/timeout_rate"] = self.sandbox["timeout"] / tests
        out["sandbox/not_run_rate"] = self.sandbox["not_run"] / tests
        out["sandbox/fallback_rate"] = self.sandbox["fallback"] / tests
        out["sandbox/remote_only_rate"] = (self.sandbox["remote_only"]
                                           / max(self.sandbox["executed"], 1))
        out["sandbox/no_program_rate"] = self.sandbox["no_program"] / rollouts
        # references lost from the data set (null, <= 0 or not finite stored durations): a
        # rollout with no measured reference on a used test cannot be ranked (eq. 10,
        # docs/design/rewards.md §1)
        out["rollouts/unrankable_rate"] = self.sandbox["unrankable"] / rollouts
        out["references/lost_tests_per_rollout"] = self.sandbox["lost_tests"] / rollouts
        out["queue/pending_groups"] = float(pending_groups)
        out["queue/in_flight_groups"] = float(in_flight_groups)
        if self.staleness:
            out["queue/staleness_mean"] = float(np.mean(self.staleness))
            out["queue/staleness_max"] = float(np.max(self.staleness))
        out["tokens/sampled_per_s"] = self.sampled_tokens / wall
        out["tokens/trained_per_s"] = self.trained_tokens / wall
        if self.peak_flops and self.seconds["train"] > 0:
            out["mfu"] = 6.0 * self.params * self.trained_tokens / (
                self.seconds["train"] * self.peak_flops)
        for phase in PHASES:
            out[f"time/{phase}_s"] = float(self.seconds[phase])
        out["time/wall_s"] = wall
        # > 1 when the rollout phases (worker threads, or a mesh of their own) overlapped the
        # train step; <= 1 when they ran in turn
        busy = sum(self.seconds[p] for p in ("sample", "execute", "score", "train"))
        out["time/overlap"] = busy / wall
        out["compiles/total"] = float(sum(compile_counts().values()))
        rss = resident_mb()
        if rss is not None:
            out["memory/rss_mb"] = rss
        return out


def write_summary(output_dir: Path, wall_s: float, resumed_from: int | None) -> Path:
    """`OUT/summary.md`: what the run did, where its time went, how its reward moved."""
    from jaxopt_rl.training.metrics import read_groups, read_metrics

    rows = read_metrics(output_dir)
    lines = ["# Run summary", "", f"- output: `{output_dir}`",
             f"- steps: {rows[-1]['step'] if rows else 0}"
             + (f" (resumed from step {resumed_from})" if resumed_from is not None else ""),
             f"- wall time of this invocation: {wall_s:.1f} s"]
    if rows:
        def mean(key):
            values = [r[key] for r in rows if r.get(key) is not None]
            return float(np.mean(values)) if values else float("nan")

        first, last = rows[0], rows[-1]
        lines += [f"- reward mean: {first.get('reward/mean')} at step {first['step']} -> "
                  f"{last.get('reward/mean')} at step {last['step']}",
                  f"- zero-advantage group rate (mean): {mean('groups/zero_advantage_rate'):.3f}",
                  f"- stale groups dropped: {sum(r.get('groups/stale_dropped', 0) for r in rows):.0f}",
                  f"- trained tokens/s (mean): {mean('tokens/trained_per_s'):.1f}", "",
                  "| phase | seconds (sum over steps) |", "|---|---|"]
        total = 0.0
        for phase in PHASES:
            seconds = sum(r.get(f"time/{phase}_s", 0.0) for r in rows)
            total += seconds
            lines.append(f"| {phase} | {seconds:.1f} |")
        lines += ["", f"Phases add up to {total:.1f} s against {wall_s:.1f} s of wall time "
                  f"(overlap {total / max(wall_s, 1e-9):.2f}): rollout phases (sample, execute, "
                  "score) run in worker threads, so in async mode they overlap the trainer's."]
    ledger = read_groups(output_dir)
    if ledger:  # the audit trail of "no prompt trained twice, none skipped" (groups.jsonl)
        trained = [p for line in ledger for p, _ in line["trained"]]
        dropped = [p for line in ledger for p in line["dropped"]]
        stale = [p for line in ledger for p in line["stale"]]
        used = trained + dropped + stale
        lines += ["", f"Prompts (loader positions) used: {len(trained)} trained, {len(dropped)} "
                  f"dropped (no signal or undefined), {len(stale)} stale; used twice: "
                  f"{len(used) - len(set(used))} (`groups.jsonl`)."]
    path = output_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


class Progress:
    """A live bar with ETA (tqdm) showing the reward and the loss of the last line."""

    def __init__(self, total: int, start: int):
        self._bar = tqdm(total=total, initial=start, desc="train", unit="step",
                         dynamic_ncols=True)
        self._at = start

    def update(self, step: int, scalars: dict[str, float]) -> None:
        self._bar.update(step - self._at)
        self._at = step
        self._bar.set_postfix(reward=f"{scalars['reward/mean']:.3f}",
                              loss=f"{scalars.get('loss', float('nan')):.4f}",
                              zero_adv=f"{scalars['groups/zero_advantage_rate']:.2f}")

    def close(self) -> None:
        self._bar.close()
