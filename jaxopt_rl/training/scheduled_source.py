"""Rollouts across processes on a mesh of their own, by one fixed schedule
(docs/design/training.md §2).

Under `jax.distributed` every computation that spans several processes is a collective, and two
threads that issue them in different orders on different hosts deadlock (measured: a threaded
async run across two processes finished step 1 and hung). So here one thread, the trainer's,
issues every device computation, and every process issues them in the same order:

    collect     `next`: the oldest sampler call in flight is scored by the scorer (the first
                process holding a rollout device) and broadcast whole to all (`share_rollouts`);
                with nothing in flight, a call is sampled first (that is sync mode)
    step        the train step is dispatched (asynchronous: it runs on the training devices) ...
    ahead       ... and while it runs, `while_training` samples the calls of later steps on the
                rollout devices (async mode: calls of `rollout.prompts_per_call` prompts each,
                launched until ceil(`loop.queue_size` / `prompts_per_call`) calls, at least
                one, are in flight; so up to that many times `prompts_per_call` groups, more
                than `queue_size` when it is not a multiple), and hands them to the sandbox on
                host threads; the processes that hold no rollout device skip the sampler but
                take the same prompts
    sync        every K steps the weights move to the rollout mesh (`training.transfer`), after
                the calls sampled ahead, so those never wait for the step they overlap
    metrics     the step's metrics reach every process (`host_metrics`)

Only host work (the sandbox calls, their scoring inputs) runs on threads; their results enter
the schedule at `next`. A group sampled ahead during step t used weights of version <= t - 1;
the batch builder drops what exceeds `grpo.max_staleness`. With K = 1 and a queue of one call
the first step equals sync mode's: its groups are sampled at `next` with the starting weights.
"""

from __future__ import annotations

import collections
import dataclasses
import time
from typing import Any

import jax
import numpy as np

from jaxopt_rl.rollouts.batch import RolloutBatch
from jaxopt_rl.rollouts.worker import Prompt, Sampled
from jaxopt_rl.training.multihost import raising, share_rollouts


@dataclasses.dataclass
class _Call:
    prompts: list[Prompt]
    version: int
    sampled: Sampled | None  # on the processes that hold rollout devices
    futures: list | None  # on the scorer: the sandbox calls, running
    started: float


class ScheduledSource:
    """Rollout batches for a run whose rollout mesh is not on every process alone (module
    docstring). Same interface as the one-process sources, plus `while_training`."""

    def __init__(self, run, stream, weights):
        from jaxopt_rl.training.rollout_source import call_seed

        self._run, self._stream, self._weights, self._seed = run, stream, weights, call_seed
        owners = sorted({d.process_index for d in run.sample_mesh.devices.flat})
        self._samples_here = jax.process_index() in owners
        self._is_scorer = jax.process_index() == owners[0]
        config = run.config
        self._per_call = config.rollout.prompts_per_call
        self._ahead = config.loop.mode == "async"
        self._max_calls = max(1, -(-config.loop.queue_size // self._per_call))
        self._in_flight: collections.deque[_Call] = collections.deque()

    def next(self, need: int, room: int | None = None) -> RolloutBatch:
        if not self._in_flight:
            self._launch(max(1, min(self._per_call, need, need if room is None else room)))
        call = self._in_flight.popleft()
        batch, error = None, None
        if self._is_scorer:
            try:
                batch = self._run.worker.score(call.sampled, call.futures, call.started)
            except Exception as err:  # every process stops at the broadcast below
                error = err
        worker = self._run.worker
        with raising(error):
            return share_rollouts(
                batch, is_source=self._is_scorer, prompts=call.prompts,
                prompt_tokens=[np.asarray(worker.tokenizer.encode(
                    worker.bank[p.problem_id].prompt), np.int32) for p in call.prompts],
                policy_version=call.version, group_size=worker.config.group_size,
                max_new_tokens=worker.config.max_new_tokens)

    def while_training(self) -> float:
        """Sample ahead while the dispatched train step runs; returns the seconds spent."""
        started = time.perf_counter()
        while self._ahead and len(self._in_flight) < self._max_calls:
            self._launch(self._per_call)
        return time.perf_counter() - started

    @property
    def in_flight_groups(self) -> int:
        return sum(len(call.prompts) for call in self._in_flight)

    def _launch(self, count: int) -> None:
        run, worker = self._run, self._run.worker
        prompts = self._stream.take(count)
        params, version = self._weights.get()
        sampled = futures = None
        if self._samples_here:
            sampled = worker.sample(run.graphdef, params, prompts,
                                    self._seed(run.config.seed, prompts), version,
                                    run.sample_mesh)
        started = time.perf_counter()
        if self._is_scorer:
            futures = worker.execute(sampled)
        self._in_flight.append(_Call(prompts, version, sampled, futures, started))

    def close(self) -> None:
        for call in self._in_flight:  # the sandbox calls of unused calls: let them finish
            for futures_G in call.futures or []:
                for future in futures_G:
                    if future is not None:
                        future.cancel()
        self._in_flight.clear()


def uses_schedule(run: Any) -> bool:
    """Several processes and a rollout mesh of its own: the fixed schedule above."""
    return jax.process_count() > 1 and run.sample_mesh is not run.mesh
