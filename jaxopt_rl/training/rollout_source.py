"""Where the trainer's rollout batches come from: the prompt stream, the sampler's copy of the
weights, and the two sources the loop reads (docs/design/training.md §2).

    sync    `SyncSource` calls the rollout worker inline for as many prompts as the step still
            needs: a step's groups are a pure function of the weights and the data cursor, so a
            resumed run repeats the uninterrupted one exactly (debugging, multi-process runs)
    async   `AsyncSource`: `loop.workers` threads sample, execute and score while the trainer
            steps, through a bounded queue, in arrival order

Either way one sampler call is one `RolloutBatch` (`rollouts.batch`), stamped with the policy
version that sampled it. Under `jax.distributed` on one colocated mesh every process samples the
same prompts with the same global arrays; process 0 executes and scores, and broadcasts the
result (`training.multihost`). A rollout mesh of its own across processes takes the fixed
schedule of `training.scheduled_source` instead (sync or async).
"""

from __future__ import annotations

import queue
import threading
import time

import jax

from jaxopt_rl.rollouts.batch import RolloutBatch
from jaxopt_rl.rollouts.worker import Prompt, RolloutWorker
from jaxopt_rl.training.cursor import DataCursor
from jaxopt_rl.training.transfer import sampler_weights

_STOP = object()


class PromptStream:
    """Loader positions from the cursor on, skipping those already consumed; thread-safe."""

    def __init__(self, prompt_source, cursor: DataCursor):
        self._source = prompt_source
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
    """The parameters the samplers use, and the policy version (optimizer step) they are.

    `transfer` (a `training.transfer.WeightTransfer`, for a rollout mesh of its own,
    `mesh.rollout_devices`) makes `set` one device-to-device copy onto the rollout shardings,
    never through host memory; `transferred_bytes` counts what moved. Without it the samplers
    share the training mesh and hold a copy there. `dtype` casts the copy's matrices
    (`rollout.weight_dtype`)."""

    def __init__(self, params, version: int, transfer=None, dtype=None):
        self._lock = threading.Lock()
        self._transfer = transfer
        self._dtype = dtype  # `rollout.weight_dtype: compute`: the matrices' dtype
        self.transferred_bytes = 0
        self.set(params, version)

    @classmethod
    def for_run(cls, run, version: int) -> Weights:
        """The run's samplers' first copy: on the rollout mesh where the run has one, in
        `rollout.weight_dtype`."""
        config = run.config
        dtype = config.model.compute_dtype if config.rollout.weight_dtype == "compute" else None
        return cls(run.state.params, version, run.weight_transfer(), dtype=dtype)

    def set(self, params, version: int) -> tuple[float, int]:
        """Copy `params` for the samplers as policy `version`; returns the seconds it took and
        the bytes moved between meshes."""
        started, moved = time.perf_counter(), 0
        # one compiled call on the training mesh: a fresh copy (the train step donates its
        # buffers), cast where asked; copying leaf by leaf would dispatch (and, once per shape,
        # compile) one operation per parameter
        copied = sampler_weights(params, self._dtype)
        if self._transfer is not None:
            copied = self._transfer(copied)
            moved = sum(leaf.nbytes for leaf in jax.tree.leaves(copied))
            self.transferred_bytes += moved
        with self._lock:
            self._params, self._version = copied, version
        return time.perf_counter() - started, moved

    def get(self):
        with self._lock:
            return self._params, self._version


def call_seed(run_seed: int, prompts: list[Prompt]) -> int:
    """A sampler call's seed: the run's seed and its first prompt's loader position."""
    return (run_seed * 1_000_003 + prompts[0].position) % (2**31)


def produce(run, stream: PromptStream, weights: Weights, count: int) -> RolloutBatch:
    """One sampler call of `count` prompts, executed and scored, on every process alike."""
    prompts = stream.take(count)
    params, version = weights.get()
    seed = call_seed(run.config.seed, prompts)
    worker: RolloutWorker = run.worker
    if jax.process_count() == 1:
        return worker.rollout(run.graphdef, params, prompts, seed, version, run.sample_mesh)
    from jaxopt_rl.training.multihost import score_on_process_zero

    sampled = worker.sample(run.graphdef, params, prompts, seed, version, run.sample_mesh)
    return score_on_process_zero(worker, sampled)


class SyncSource:
    """Rollout batches produced inline, never more prompts than the step still needs (nor
    than the group cap leaves room for)."""

    def __init__(self, run, stream: PromptStream, weights: Weights):
        self._args = (run, stream, weights)

    def next(self, need: int, room: int | None = None) -> RolloutBatch:
        count = min(self._args[0].config.rollout.prompts_per_call, need,
                    need if room is None else room)
        return produce(*self._args, max(1, count))

    in_flight_groups = 0  # nothing is sampled ahead

    def close(self) -> None:
        pass


def _producer_thread(run, stream: PromptStream, weights: Weights, out: queue.Queue,
                     stop: threading.Event, errors: list[BaseException]) -> None:
    try:
        while not stop.is_set():
            rollouts = produce(run, stream, weights, run.config.rollout.prompts_per_call)
            while not stop.is_set():
                try:
                    out.put(rollouts, timeout=0.1)
                    break
                except queue.Full:
                    continue
    except BaseException as err:  # surfaced by the trainer, never swallowed
        errors.append(err)
        out.put(_STOP)


class AsyncSource:
    """Rollout batches from `loop.workers` threads through a bounded queue, in arrival order.
    `loop.queue_size` counts groups; the queue holds whole batches of `prompts_per_call`."""

    def __init__(self, run, stream: PromptStream, weights: Weights):
        per_call = self._per_call = run.config.rollout.prompts_per_call
        self._queue: queue.Queue = queue.Queue(maxsize=-(-run.config.loop.queue_size // per_call))
        self._stop = threading.Event()
        self._errors: list[BaseException] = []
        self._threads = [
            threading.Thread(target=_producer_thread, daemon=True, name=f"rollout-{i}",
                             args=(run, stream, weights, self._queue, self._stop, self._errors))
            for i in range(run.config.loop.workers)]
        for thread in self._threads:
            thread.start()

    def next(self, need: int, room: int | None = None) -> RolloutBatch:
        item = self._queue.get()
        if item is _STOP:
            raise RuntimeError("a rollout worker failed") from self._errors[0]
        return item

    @property
    def in_flight_groups(self) -> int:
        """Groups in the queue (whole calls of `rollout.prompts_per_call`)."""
        return self._queue.qsize() * self._per_call

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=60)
