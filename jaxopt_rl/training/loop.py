"""The GRPO run, top to bottom, as named phases (spec training.md §2):

    setup       distributed start, mesh, environment, data, sandbox, state born sharded or
                restored from the latest checkpoint ("resumed from step N of PATH")
    rollouts    prompts -> `rollouts.RolloutWorker` (sample -> execute -> score) -> groups
                stamped with the policy version that sampled them; in `async` mode worker
                threads fill a bounded queue while the trainer steps, in `sync` mode the trainer
                calls the very same producer inline (debugging, exact reproducibility)
    select      rollouts with an undefined reward are dropped (counted), then groups older than
                S_max optimizer steps and groups without signal (counted); advantages
    pack        whole groups into `grpo.rows` rows of N tokens, split into microbatches
    step        the one jitted train step (`training.step`)
    sync        every K steps the samplers get a copy of the new weights
    log         metrics.jsonl + TensorBoard; checkpoint every `checkpoint.every` steps

No replay buffer: a group is used by one step or dropped.

Resume without losing or repeating a prompt: prompts are numbered by their position in the
loader. The checkpoint stores the lowest position the trainer has not consumed and the
positions above it it has (`DataCursor`); a resumed run re-samples exactly the prompts in flight
at the checkpoint and skips the consumed ones.

Multi-process (`jax.distributed`): every process samples the same prompts with the same
global arrays; process 0 runs the sandbox and scores, and the rewards and signals are broadcast,
so every process packs the same batch. Multi-process runs use `sync` mode: two threads issuing
collectives in different orders on different hosts would deadlock.
"""

from __future__ import annotations

import collections
import queue
import threading
import time
from pathlib import Path
from typing import Any

import jax
import numpy as np

from jaxopt_rl.config import to_dict
from jaxopt_rl.rollouts.worker import Group, Prompt, RolloutWorker
from jaxopt_rl.training import packing
from jaxopt_rl.training.config import TrainConfig
from jaxopt_rl.training.cursor import DataCursor
from jaxopt_rl.training.setup import Run, setup_run
from jaxopt_rl.training.step import batch_sharding

_STOP = object()


@jax.jit
def _copy_tree(params):
    """A fresh copy of every leaf, as one compiled call: the train step donates (reuses) the
    state's buffers in place, and copying leaf by leaf would dispatch (and, once per shape,
    compile) one operation per parameter."""
    return jax.tree.map(lambda leaf: leaf.copy(), params)


class PromptStream:
    """Loader positions from the cursor on, skipping those already consumed; thread-safe."""

    def __init__(self, run: Run, cursor: DataCursor):
        self._source = run.prompt_source
        self._position = cursor.next_position
        self._skip = set(cursor.consumed_above)
        self._lock = threading.Lock()

    def take(self, count: int) -> list[Prompt]:
        with self._lock:
            out = []
            while len(out) < count:
                position = self._position
                self._position += 1
                if position in self._skip:
                    continue
                out.append(Prompt(self._source[position]["problem_id"], position))
            return out


class Weights:
    """The parameters the samplers use, and the policy version (optimizer step) they are."""

    def __init__(self, params, version: int):
        self._lock = threading.Lock()
        self.set(params, version)

    def set(self, params, version: int) -> None:
        copied = _copy_tree(params)
        with self._lock:
            self._params, self._version = copied, version

    def get(self):
        with self._lock:
            return self._params, self._version


def _produce(run: Run, stream: PromptStream, weights: Weights, count: int) -> list[Group]:
    """The groups of `count` prompts in one sampler call (the rollout phases), on every
    process alike."""
    prompts = stream.take(count)
    params, version = weights.get()
    seed = (run.config.seed * 1_000_003 + prompts[0].position) % (2**31)
    worker: RolloutWorker = run.worker
    sampled = worker.sample(run.graphdef, params, prompts, seed, version, run.sample_mesh)
    if jax.process_count() == 1:
        started = time.perf_counter()
        in_flight = [(s, worker.execute(s)) for s in sampled]
        return [worker.score(s, futures, started) for s, futures in in_flight]
    from jaxopt_rl.training.multihost import score_on_process_zero

    return score_on_process_zero(worker, sampled)


def _producer_thread(run: Run, stream: PromptStream, weights: Weights, out: queue.Queue,
                     stop: threading.Event, errors: list[BaseException]) -> None:
    try:
        while not stop.is_set():
            for group in _produce(run, stream, weights, run.config.rollout.prompts_per_call):
                while not stop.is_set():
                    try:
                        out.put(group, timeout=0.1)
                        break
                    except queue.Full:
                        continue
    except BaseException as err:  # surfaced by the trainer, never swallowed
        errors.append(err)
        out.put(_STOP)


class SyncSource:
    """Groups produced inline, only as many prompts as the step still needs: a step's groups
    are then a pure function of the weights and the cursor, so a resumed run repeats the
    uninterrupted one exactly."""

    def __init__(self, run: Run, stream: PromptStream, weights: Weights):
        self._args = (run, stream, weights)
        self._buffer: collections.deque[Group] = collections.deque()

    def next(self, need: int) -> Group:
        if not self._buffer:
            run = self._args[0]
            count = max(1, min(run.config.rollout.prompts_per_call, need))
            self._buffer.extend(_produce(*self._args, count))
        return self._buffer.popleft()

    def close(self) -> None:
        self._buffer.clear()


class AsyncSource:
    """Groups from `loop.workers` rollout threads through a bounded queue, in arrival order."""

    def __init__(self, run: Run, stream: PromptStream, weights: Weights):
        self._queue: queue.Queue = queue.Queue(maxsize=run.config.loop.queue_size)
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        self._threads = [
            threading.Thread(target=_producer_thread, daemon=True, name=f"rollout-{i}",
                             args=(run, stream, weights, self._queue, self._stop, self._errors))
            for i in range(run.config.loop.workers)]
        for thread in self._threads:
            thread.start()

    def next(self, need: int) -> Group:
        item = self._queue.get()
        if item is _STOP:
            raise RuntimeError("a rollout worker failed") from self._errors[0]
        return item

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)


def without_undefined(group: Group) -> tuple[packing.Group | None, int]:
    """The trainable part of a group: rollouts with a defined reward; None if fewer than two
    remain (no baseline). Returns it and the number of rollouts dropped."""
    keep = np.flatnonzero(np.isfinite(group.rewards_G))
    dropped = len(group.rewards_G) - len(keep)
    if len(keep) < 2:
        return None, dropped
    return packing.Group(
        prompt=group.prompt_tokens,
        completions=[group.completion_tokens[i] for i in keep],
        sampler_logps=[group.sampler_logprobs[i] for i in keep],
        rewards=group.rewards_G[keep], version=group.policy_version,
        problem_id=group.problem_id), dropped


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


def write_summary(output_dir: Path, wall_s: float, resumed_from: int | None) -> Path:
    """`OUT/summary.md`: what the run did, where its time went, how its reward moved."""
    from jaxopt_rl.training.metrics import read_metrics
    from jaxopt_rl.training.window import PHASES

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
        lines += ["", f"Phases add up to {total:.1f} s against {wall_s:.1f} s of wall time: "
                  "rollout phases (sample, execute, score) run in worker threads, so in "
                  "async mode they overlap the trainer's."]
    path = output_dir / "summary.md"
    path.write_text("\n".join(lines) + "\n")
    return path


def _train(run: Run, slow_trainer_s: float) -> None:
    config, cfg_grpo = run.config, run.config.grpo
    state = run.state
    cursor = run.cursor
    stream = PromptStream(run, cursor)
    weights = Weights(state.params, int(state.step))
    rows_per_mb = cfg_grpo.rows // cfg_grpo.microbatches
    sharding = batch_sharding(run.mesh, rows_per_mb, run.rules)
    step = int(state.step)
    pending: list[packing.ScoredGroup] = []
    position_of: dict[int, int] = {}  # id(scored group) -> its loader position
    window = run.new_window()
    source = (SyncSource if config.loop.mode == "sync" else AsyncSource)(run, stream, weights)
    progress = run.progress(step)
    try:
        while step < config.steps:
            phase_start = time.perf_counter()
            arrived = 0
            cap = config.loop.max_groups_per_step
            while len(pending) < config.loop.prompts_per_step:
                if cap and arrived == cap:
                    if config.loop.when_capped == "step":
                        window.counts["capped_steps"] += 1
                        break
                    raise RuntimeError(
                        f"step {step + 1}: {arrived} groups arrived and fewer than "
                        f"{config.loop.prompts_per_step} carried a signal (loop.max_groups_per_step"
                        f"={cap}); every rollout earns the same reward: "
                        "check the environment, the temperature and the starting weights")
                group = source.next(config.loop.prompts_per_step - len(pending))
                arrived += 1
                window.add_group(group)
                window.counts["groups"] += 1
                trainable, dropped = without_undefined(group)
                window.counts["undefined_rollouts"] += dropped
                if trainable is None:
                    window.counts["no_baseline"] += 1
                    cursor.consume(group.position)
                    continue
                selection = packing.select_groups([trainable], step,
                                                  max_staleness=cfg_grpo.max_staleness,
                                                  river=cfg_grpo.river)
                window.counts["stale"] += selection.stale
                window.counts["zero_signal"] += selection.zero_signal
                window.staleness.extend(selection.staleness)
                if not selection.kept:
                    cursor.consume(group.position)  # dropped: used by no step, never redone
                for scored in selection.kept:
                    position_of[id(scored)] = group.position
                    pending.append(scored)
            window.seconds["wait_rollouts"] += time.perf_counter() - phase_start
            if slow_trainer_s:
                time.sleep(slow_trainer_s)
            start = time.perf_counter()
            packed = packing.pack(pending[: config.loop.prompts_per_step], rows=cfg_grpo.rows,
                                  horizon=cfg_grpo.horizon)
            pending = packed.leftover + pending[config.loop.prompts_per_step:]
            for scored in packed.packed:  # consumed when trained, so a resume redoes the rest
                cursor.consume(position_of.pop(id(scored)))
            batch = packing.split_microbatches(packed.batch, cfg_grpo.microbatches)
            batch = run.put_batch(batch, sharding)
            window.seconds["pack"] += time.perf_counter() - start
            start = time.perf_counter()
            state, metrics = run.train_step(state, batch)
            step += 1
            if step % config.loop.weight_sync_every == 0:
                sync_start = time.perf_counter()
                weights.set(state.params, step)
                window.seconds["weight_sync"] += time.perf_counter() - sync_start
            metrics = jax.device_get(metrics)  # after dispatching the weight copy
            window.seconds["train"] += time.perf_counter() - start
            window.add_step(packed)
            if step % config.loop.log_every == 0 or step == config.steps:
                scalars = window.scalars(metrics)
                run.writer.write(step, scalars)
                if window.staleness:
                    run.writer.histogram(step, "queue/staleness", window.staleness)
                progress.update(step, scalars)
                window = run.new_window()
            if step % config.checkpoint.every == 0 or step == config.steps:
                start = time.perf_counter()
                run.checkpointer.save(state, data={"cursor": cursor.to_json()},
                                      config=to_dict(config))
                window.seconds["checkpoint"] += time.perf_counter() - start
    finally:
        source.close()
        progress.close()
    run.state = state
