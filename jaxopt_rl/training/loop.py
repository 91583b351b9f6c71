"""The GRPO run, top to bottom, as named phases (docs/design/training.md §2):

    setup       distributed start, mesh, environment, data, sandbox, state born sharded or
                restored from the latest checkpoint ("resumed from step N of PATH")
                (`training.setup`)
    collect     rollout batches (`rollouts.RolloutBatch`: sample -> execute -> score, from
                `training.rollout_source`, sync or async) go to the batch builder, which drops
                undefined rollouts, stale groups and groups without signal (counted) and keeps
                the rest with their advantages, until a step's groups are pending
    pack        whole groups into `grpo.rows` rows of N tokens, split into microbatches
                (`training.batch`), placed on the mesh
    step        the one jitted train step (`training.step`), under a transfer guard: any
                implicit host<->device copy in the step fails loudly; parameters that turn
                non-finite stop the run (`errors.RunStopped`) before anything is saved
    sync        every K steps the samplers get a copy of the new weights
    log         metrics.jsonl + TensorBoard (`training.window`); a checkpoint every
                `checkpoint.every` steps

Resume without losing or repeating a prompt: prompts are numbered by their position in the
loader. A group's position is consumed when it is dropped or trained; the checkpoint stores the
lowest position not consumed and the positions above it that are (`DataCursor`), so a resumed
run re-samples exactly the prompts in flight at the checkpoint and skips the consumed ones.

Multi-process (`jax.distributed`): on one colocated mesh, `sync` only; with a rollout mesh of
its own (`mesh.rollout_devices`; async over several processes takes half of the devices), sync
or async by one fixed schedule that every process follows (`training.scheduled_source`): two
threads issuing collectives in different orders on different hosts would deadlock.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import jax

from jaxopt_rl.config import to_dict
from jaxopt_rl.errors import RunStopped
from jaxopt_rl.training.batch import BatchBuilder, StepBatch
from jaxopt_rl.training.checkpoints import best_metric
from jaxopt_rl.training.config import TrainConfig
from jaxopt_rl.training.metrics import require_finite
from jaxopt_rl.training.multihost import host_metrics
from jaxopt_rl.training.rollout_source import AsyncSource, PromptStream, SyncSource, Weights
from jaxopt_rl.training.scheduled_source import ScheduledSource, uses_schedule
from jaxopt_rl.training.setup import Run, setup_run
from jaxopt_rl.training.step import batch_sharding
from jaxopt_rl.training.window import StepWindow, write_summary


def train(config: TrainConfig, *, sandbox: Any = None, log=print,
          slow_trainer_s: float = 0.0) -> Path:
    """Run GRPO to `config.steps` optimizer steps (resuming when the output folder holds a
    checkpoint); returns the output folder. `slow_trainer_s` sleeps before each step (tests
    use it to force stale groups)."""
    run = setup_run(config, sandbox=sandbox, log=log)
    try:
        _train(run, slow_trainer_s)
    finally:
        run.close()
    if jax.process_index() == 0:
        write_summary(run.output_dir, time.time() - run.started, run.resumed_from)
    return run.output_dir


@dataclasses.dataclass
class Loop:
    """What the phases share: the run, the trainer's state and step, and this log window."""

    run: Run
    state: Any
    step: int
    builder: BatchBuilder
    weights: Weights
    source: SyncSource | AsyncSource | ScheduledSource
    window: StepWindow
    dropped: list[int] = dataclasses.field(default_factory=list)  # this step's, for the ledger


def _train(run: Run, slow_trainer_s: float) -> None:
    config = run.config
    first_step = run.resumed_from or 0  # not read from the state: some processes hold none of it
    weights = Weights.for_run(run, first_step)
    stream = PromptStream(run.prompt_source, run.cursor)
    source = (ScheduledSource if uses_schedule(run) else
              SyncSource if config.loop.mode == "sync" else AsyncSource)(run, stream, weights)
    loop = Loop(run, run.state, first_step,
                BatchBuilder(config.grpo, config.loop.prompts_per_step), weights, source,
                run.new_window())
    progress = run.progress(loop.step)
    try:
        while loop.step < config.steps:
            collect(loop)
            if slow_trainer_s:
                time.sleep(slow_trainer_s)
            step_batch, batch = pack(loop)
            metrics = step(loop, batch)
            loop.window.add_step(step_batch.tokens)
            checkpoint(loop, log_metrics(loop, metrics, progress))
    finally:
        source.close()
        progress.close()
    run.state = loop.state


def collect(loop: Loop) -> None:
    """Rollout batches into the builder until a step's groups are pending, or until
    `loop.max_groups_per_step` groups arrived (then step short, or fail, by choice)."""
    cfg, window = loop.run.config.loop, loop.window
    started, arrived, cap = time.perf_counter(), 0, cfg.max_groups_per_step
    while loop.builder.need:
        if cap and arrived >= cap:
            if cfg.when_capped == "step":
                window.counts["capped_steps"] += 1
                break
            raise RunStopped(
                f"step {loop.step + 1}: {arrived} groups arrived and fewer than "
                f"{cfg.prompts_per_step} carried a signal (loop.max_groups_per_step={cap}); "
                "every rollout earns the same reward: check the environment, the temperature "
                "and the starting weights")
        rollouts = loop.source.next(loop.builder.need, cap - arrived if cap else None)
        arrived += rollouts.prompts
        if loop.run.config.loop.log_rollouts:
            loop.run.writer.write_rollouts(loop.step + 1,
                                           rollouts.rollout_records(loop.run.worker.tokenizer))
        offered = loop.builder.offer(rollouts, loop.step)
        window.add_rollouts(rollouts, offered)
        for position in offered.dropped_positions:  # used by no step, never redone
            loop.run.cursor.consume(position)
        loop.dropped.extend(offered.dropped_positions)
    window.seconds["wait_rollouts"] += time.perf_counter() - started


def pack(loop: Loop) -> tuple[StepBatch, Any]:
    """The step's batch, on the mesh; its groups, and the waiting groups that grew stale, are
    consumed (the rest wait, and a resume redoes them)."""
    started, grpo = time.perf_counter(), loop.run.config.grpo
    step_batch = loop.builder.take(loop.step)
    loop.window.counts["stale"] += len(step_batch.stale_positions)
    for position in step_batch.trained_positions + step_batch.stale_positions:
        loop.run.cursor.consume(position)
    loop.run.writer.write_groups(loop.step + 1, zip(step_batch.trained_positions,
                                                    step_batch.trained_versions),
                                 loop.dropped, step_batch.stale_positions)
    loop.dropped = []
    sharding = batch_sharding(loop.run.mesh, grpo.rows // grpo.microbatches, loop.run.rules)
    batch = loop.run.put_batch(step_batch.batch, sharding)
    loop.window.seconds["pack"] += time.perf_counter() - started
    return step_batch, batch


def step(loop: Loop, batch) -> dict:
    """One optimizer step; while it runs, the scheduled source samples ahead (several processes,
    async); then the weight copy to the samplers every `weight_sync_every` steps (after the
    calls sampled ahead, so they never wait for this step) and the metrics to the host."""
    started, run = time.perf_counter(), loop.run
    with jax.transfer_guard("disallow"):
        loop.state, metrics = run.train_step(loop.state, batch)
    loop.step += 1
    ahead_s = loop.source.while_training() if isinstance(loop.source, ScheduledSource) else 0.0
    with jax.transfer_guard("disallow"):
        if loop.step % run.config.loop.weight_sync_every == 0:
            loop.window.add_weight_sync(*loop.weights.set(loop.state.params, loop.step))
    metrics = host_metrics(metrics, run.trains_everywhere)
    # the sampling ahead is counted in the calls' own sample seconds, not as training
    loop.window.seconds["train"] += time.perf_counter() - started - ahead_s
    require_finite(metrics, loop.step)  # before the checkpoint phase: never save a NaN state
    return metrics


def log_metrics(loop: Loop, metrics: dict, progress) -> dict:
    """Every `log_every` steps (and the last): one metrics line, then a fresh window. Returns
    the step's metrics, and the window's when a line was written (`checkpoint.best_metric`)."""
    run, step_ = loop.run, loop.step
    if step_ % run.config.loop.log_every and step_ != run.config.steps:
        return metrics
    scalars = loop.window.scalars(metrics, pending_groups=len(loop.builder.pending),
                                  in_flight_groups=loop.source.in_flight_groups)
    best_metric(run.config.checkpoint, scalars, step_)  # a wrong name stops at the first line
    run.writer.write(step_, scalars)
    if loop.window.staleness:
        run.writer.histogram(step_, "queue/staleness", loop.window.staleness)
    progress.update(step_, scalars)
    loop.window = run.new_window()
    return scalars


def checkpoint(loop: Loop, metrics: dict) -> None:
    """Every `checkpoint.every` steps (and the last): state, data cursor and config; `metrics`
    rank it when `checkpoint.best_metric` names one of them."""
    run = loop.run
    if loop.step % run.config.checkpoint.every and loop.step != run.config.steps:
        return
    started = time.perf_counter()
    run.checkpointer.save(loop.state, data={"cursor": run.cursor.to_json()},
                          config=to_dict(run.config), step=loop.step, metrics=metrics)
    loop.window.seconds["checkpoint"] += time.perf_counter() - started
