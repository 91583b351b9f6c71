"""One shared, shuffled timing pass on the sandbox (docs/design/dataset-eval.md §5.5 step 2;
docs/design/sandbox-timing.md §3.2): candidates and references of every problem, executed in one
random order, so that no model and no problem gets a quieter slice of the machine than another.

`run_jobs(sandbox, jobs, seed)` shuffles the jobs, keeps a bounded number in flight through
`sandbox.submit` (an embedded pool or a fleet from `sandbox_cluster.connect`), shows progress,
and returns per-job outcomes in the jobs' ORIGINAL order plus the executed order.
`sandbox_state(sandbox)` records what the numbers were measured in.

Choice: the shuffle is over jobs (one program on its problem's tests), not over single tests:
the sandbox runs a program's tests one after another in one warm jail, which is what keeps a
test's duration free of interpreter start-up; candidates of every model and the references of
every problem are interleaved at that granularity.

`_records_from_results` is the one place here that reads sandbox `TestResult`s: it goes
through `jaxopt_rl.rollouts.execute` (the project's TestResult -> ExecutionRecord conversion,
with its timing provenance: fleet, cap, local, none) and keeps, per test, the raw status, the
duration as the one rule reads it (`data.execution_table.timed_duration`: a timeout at the cap,
a fleet duration kept; 0 where the rule leaves none, for the dump's finite numbers) and the
provenance (a success or timeout whose duration cannot rank, NaN or negative, is recorded with
no duration and provenance `none`). The evaluation's dumps and the trainer's reference
re-timing (`rollouts.problems.ProblemBank.retime_references`) both run through `run_jobs`.
"""

from __future__ import annotations

import dataclasses
import platform
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from jaxopt_rl.data.execution_table import rankable, timed_duration, timing_code
from jaxopt_rl.rewards.records import STATUS_CODE, SUCCESS, TIMEOUT
from sandbox_cluster.api import Limits, Status, TestCase


@dataclasses.dataclass(frozen=True)
class Job:
    """One program on one problem's tests."""

    key: tuple  # caller's identity of the job, e.g. (problem index, "s", sample index)
    program: str
    tests: tuple[TestCase, ...]
    limits: Limits
    kinds: tuple[str, ...]
    interface: str = "stdio"
    float_tolerance: float | None = None
    stop_after_failure: bool = False  # RunRequest.stop_after_failure (candidates only)


@dataclasses.dataclass(frozen=True)
class Outcome:
    status: list[str]  # sandbox Status values, one per test
    duration_s: list[float]  # a timeout at the cap; 0 where there is no measurement
    timing: list[str]  # provenance of each duration: fleet, cap, local, none


def _records_from_results(results, job: Job) -> Outcome:
    """Sandbox results of one job -> raw statuses, durations and provenance (see module doc)."""
    from jaxopt_rl.rollouts.execute import TestSpec, execution_records

    specs = [TestSpec(test_id=str(i), test_kind=kind, io_chars=0)
             for i, kind in enumerate(job.kinds)]
    records = execution_records("-", "-", specs, list(results), job.limits.time_s)
    status_T = np.array([STATUS_CODE[r.status] for r in records], np.int8)
    timed_T = timed_duration(status_T, np.array([r.duration_s for r in records], float),
                             job.limits.time_s,
                             np.array([timing_code(r.timing) for r in records], np.int8))
    # a success or timeout whose duration cannot rank (NaN, negative: a broken node) keeps no
    # duration and says so ("none"), so nothing downstream ranks a made-up 0
    unrankable_T = np.isin(status_T, (SUCCESS, TIMEOUT)) & ~rankable(status_T, timed_T)
    return Outcome([Status(r.status).value for r in records],
                   [0.0 if bad or not np.isfinite(s) else max(0.0, float(s))
                    for s, bad in zip(timed_T, unrankable_T)],
                   ["none" if bad else r.timing for r, bad in zip(records, unrankable_T)])


def sandbox_state(sandbox: Any, started: float | None = None) -> dict[str, Any]:
    """Where and when the timing pass ran: backend, slots and cores, degraded features, the
    client's pipeline counters (retries, fallbacks), host and Python."""
    state: dict[str, Any] = {
        "client": type(sandbox).__module__ + "." + type(sandbox).__name__,
        "host": platform.node(), "python": platform.python_version(),
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    pool = getattr(sandbox, "pool", None)
    if pool is not None and hasattr(pool, "stats"):
        stats = pool.stats()
        state["pool"] = {k: stats.get(k) for k in ("backend", "slots", "cores", "cgroup_version",
                                                  "degraded", "jail_starts", "harness_lost")}
    if hasattr(sandbox, "stats"):
        state["client_stats"] = dict(sandbox.stats())
    if hasattr(sandbox, "health"):
        try:
            state["fleet"] = sandbox.health()
        except Exception as err:  # the state is informational; never fail a pass on it
            state["fleet"] = f"unavailable: {err!r}"
    options = getattr(sandbox, "options", None)
    if options is not None:
        state["fallback"] = getattr(options, "fallback", None)
    if started is not None:
        state["wall_s"] = round(time.time() - started, 3)
    return state


def run_jobs(sandbox: Any, jobs: Sequence[Job], seed: int = 0, max_in_flight: int = 8,
             description: str = "timing pass") -> tuple[list[Outcome], list[int]]:
    """Execute every job once in a shuffled order; `(outcomes in job order, executed order)`."""
    from rich.progress import Progress

    order = [int(i) for i in np.random.default_rng(seed).permutation(len(jobs))]
    outcomes: list[Outcome | None] = [None] * len(jobs)
    slots = max(1, max_in_flight)
    gate = threading.Semaphore(slots)
    with Progress(transient=False) as progress:
        task = progress.add_task(description, total=len(jobs))
        for index in order:
            job = jobs[index]
            gate.acquire()
            future = sandbox.submit(job.program, list(job.tests), job.limits,
                                    interface=job.interface, float_tolerance=job.float_tolerance,
                                    test_kinds=list(job.kinds),
                                    stop_after_failure=job.stop_after_failure)

            def done(fut, index=index, job=job):
                try:
                    outcomes[index] = _records_from_results(fut.result(), job)
                except Exception as err:  # a failed call is inconclusive, never a verdict
                    n = len(job.tests)
                    outcomes[index] = Outcome(["infra_error"] * n, [0.0] * n,
                                              [f"none: {type(err).__name__}"] * n)
                finally:
                    gate.release()
                    progress.advance(task)

            future.add_done_callback(done)
        for _ in range(slots):  # every callback has released its slot: all outcomes are in
            gate.acquire()
    missing = [i for i, o in enumerate(outcomes) if o is None]
    if missing:
        raise RuntimeError(f"timing pass: job {missing[0]} has no outcome")
    return outcomes, order
