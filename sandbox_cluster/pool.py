"""LocalPool: a fixed set of slots, each pinned to a core, running jobs from one queue.

    pool = LocalPool()                                   # one slot per usable core
    results = pool.run(program, [TestCase("1 2\\n", "3\\n")], Limits(time_s=2))
    future = pool.submit(program, tests, limits, checker=checker_source)
    pool.stats(); pool.close()

A job is (program, tests, limits, options); a slot runs one job at a time in its own jail
(`jails.batch.execute_batch`), so the cores are never shared implicitly
(docs/design/sandbox-timing.md §1.3). Each slot keeps one *spare* jail waiting for its next job: the
jail of the previous job when it ended clean (every test's processes reaped, scratch emptied,
harness healthy; at most `MAX_JOBS_PER_JAIL` programs and half the jail lifetime), else a freshly
started one. This takes jail start-up (~50 ms) off the critical path. `reuse_jails=False` gives
every program a fresh jail, and so a fresh interpreter process: a module-level loop runs a few
percent faster or slower in one CPython process than in another (hash seed, heap layout), so
comparisons that must not share that draw (e.g. benchmarks/sandbox_fidelity.py) turn reuse off.

`run` blocks, `submit` returns a Future; both are thread-safe. The pool accepts at most
`slots + queue_limit` unfinished jobs (running or waiting); beyond that `submit` raises
QueueFull (the server answers 429). `queue_limit=0`: accept only when a slot is free; None:
no limit. Malformed requests raise ValueError/TypeError from `submit` naming the field
(e.g. "tests[3].input must be a JSON object"); program behaviour never raises.

A slot survives its own faults: a jail that will not start (after one retry), or whose start
raises anything unexpected, fails the job that needed it with infra_error naming the cause
(the jail tool's last stderr, or the exception); a spare that cannot be started is logged and
skipped. Either way the slot's thread goes on taking jobs.

Pinning: slot i gets core `cores[i % len(cores)]` through the slot's cpuset cgroup when the
host allows it, and through the harness's sched_setaffinity in any case (the program cannot
undo it: seccomp refuses sched_setaffinity). More slots than cores is allowed but reported as
the degraded feature "cores_shared". Pinning keeps the program on its core; it cannot keep
other host processes off it: a timing fleet must also isolate those cores (isolcpus, or a
cpuset the rest of the host does not use), and leave one core to this supervisor, whose
threads otherwise preempt the slots (`cores=usable[1:]`; on a 2-core box that took the
ranking-noise benchmark from ~9 pp to 1.4 pp). Every degraded feature (a missing cgroup
controller, no uid separation, no seccomp table, shared cores) is logged once per process and
listed by `stats()["degraded"]`. A cgroup directory left by an earlier pool with this pool's
own name (a pool running as pid 1 that crashed) is never a reason to degrade: it is reclaimed,
or the constructor raises `jails.cgroups.CgroupConflict` (see `jails.cgroups`).
"""

from __future__ import annotations

import collections
import concurrent.futures
import logging
import os
import queue
import threading
from collections.abc import Sequence

from sandbox_cluster.api import REPEAT_AGGREGATES, Limits, RunRequest, Status, TestCase, TestResult
from sandbox_cluster.jails import (
    UID_BLOCK,
    JailBackend,
    JailStartError,
    Placement,
    get_backend,
)
from sandbox_cluster.jails.batch import CHECKER_LIMITS, execute_batch
from sandbox_cluster.jails.cgroups import CgroupConflict, CgroupTree
from sandbox_cluster.jails.seccomp import build_filter
from sandbox_cluster.jails.session import JailSession, start_session

log = logging.getLogger(__name__)
DEFAULT_LIMITS = Limits()
# Memory the jail needs beyond the program's own cap: the harness, the output memfds.
JAIL_MEMORY_OVERHEAD_MB = 128
PIDS_PER_JAIL = 128
_logged_degraded: set[str] = set()


class QueueFull(Exception):
    """Every slot is busy and `queue_limit` jobs are already waiting; retry later."""


def _log_degraded_once(degraded: dict[str, str]) -> None:
    for feature, reason in degraded.items():
        if feature not in _logged_degraded:
            _logged_degraded.add(feature)
            log.warning("sandbox degraded: %s (%s)", feature, reason)


def validate_job(program: str, tests: list[TestCase], limits: Limits, interface: str,
                 checker: str | None, float_tolerance: float | None,
                 repeat_aggregate: str, test_kinds: Sequence[str] | None = None,
                 stop_after_failure: bool = False) -> RunRequest:
    """The request as a `RunRequest`, whose construction is the one validator (an error naming
    the bad field)."""
    return RunRequest(program, tuple(tests), limits, interface, checker, float_tolerance,
                      repeat_aggregate, test_kinds, stop_after_failure=stop_after_failure)


class _Slot:
    """One worker thread, one pinned core, one cgroup, at most one spare jail."""

    def __init__(self, pool: LocalPool, placement: Placement) -> None:
        self.pool = pool
        self.placement = placement
        self.spare: JailSession | None = None
        self.busy = False
        self.applied_jail_mb: int | None = None  # the slot cgroup's memory limit, once set
        self.seccomp = pool.seccomp
        self.thread = threading.Thread(target=self._work, name=f"sandbox-slot{placement.slot}",
                                       daemon=True)

    def _start(self) -> JailSession:
        """A started jail, or JailStartError: one retry after a JailStartError; any other
        exception (a bug in starting one) is logged with its traceback and raised as a
        JailStartError naming it, so the job that needed the jail gets infra_error and the
        slot goes on serving."""
        self.pool._count("jail_starts")
        try:
            try:
                return start_session(self.pool.backend, self.placement)
            except JailStartError as first:
                log.warning("slot %d: jail start failed, retrying once: %s",
                            self.placement.slot, first)
                return start_session(self.pool.backend, self.placement)
        except JailStartError:
            raise
        except Exception as exc:
            log.exception("slot %d: jail start raised unexpectedly", self.placement.slot)
            raise JailStartError(f"jail start failed unexpectedly: {type(exc).__name__}: "
                                 f"{exc}") from exc

    # --- the JailSource a batch uses (jails.batch) ---

    @property
    def backend(self) -> JailBackend:
        return self.pool.backend

    def take(self) -> JailSession:
        spare, self.spare = self.spare, None
        if spare is not None and spare.reusable():
            return spare
        if spare is not None:
            spare.close()
        return self._start()

    def give_back(self, session: JailSession) -> None:
        if (self.pool.reuse_jails and self.spare is None and session.reusable()
                and not self.pool.closing):
            self.spare = session
        else:
            session.close()

    def count(self, event: str) -> None:
        self.pool._count(event)

    def _refill(self) -> None:
        if self.pool.prestart and self.spare is None and not self.pool.closing:
            try:
                self.spare = self._start()
            except JailStartError as exc:
                log.warning("slot %d: no spare jail: %s", self.placement.slot, exc)

    def _apply_limits(self, job: RunRequest) -> None:
        cgroup = self.placement.cgroup
        if cgroup is None:
            return
        memory_mb, output_mb = job.limits.memory_mb, job.limits.output_mb
        if job.checker is not None:  # the checker runs in this slot's jail after the program
            memory_mb = max(memory_mb, CHECKER_LIMITS.memory_mb)
            output_mb = max(output_mb, CHECKER_LIMITS.output_mb)
        envelope = self.pool.backend.envelope
        jail_mb = (memory_mb + 2 * output_mb + envelope.tmpfs_mb + envelope.shm_mb
                   + JAIL_MEMORY_OVERHEAD_MB)
        if self.applied_jail_mb == jail_mb:
            return  # nothing else writes the slot's limits; a cgroup write costs ~0.1 ms
        try:
            cgroup.set_memory_limit(jail_mb << 20)
            cgroup.set_pids_limit(PIDS_PER_JAIL)
            self.applied_jail_mb = jail_mb
        except OSError as exc:
            self.applied_jail_mb = None
            log.warning("slot %d: cannot set cgroup limits: %s", self.placement.slot, exc)

    def cpu_s(self) -> float | None:
        """CPU seconds used by this slot's jails so far (None: not accounted on this host)."""
        used = self.placement.cgroup.cpu_usage_ns() if self.placement.cgroup else None
        return None if used is None else used / 1e9

    def _work(self) -> None:
        self._refill()
        while True:
            item = self.pool._queue.get()
            if item is None:
                break
            job, future = item
            if not future.set_running_or_notify_cancel():  # cancelled while waiting
                with self.pool._lock:
                    self.pool._outstanding -= 1
                continue
            self.busy = True
            try:
                self._apply_limits(job)
                results = execute_batch(job, self)
                self.pool._record(results)
                future.set_result(results)
            except BaseException as exc:  # a bug here must reach the caller, not kill the slot
                log.exception("slot %d: job failed", self.placement.slot)
                future.set_exception(exc)
            finally:
                self.busy = False
                with self.pool._lock:
                    self.pool._outstanding -= 1
            self._refill()
        if self.spare is not None:
            self.spare.close()
            self.spare = None


class LocalPool:
    """Slots pinned to cores running jobs in jails; see the module docstring."""

    def __init__(self, slots: int | None = None, backend: str | None = None,
                 cores: list[int] | None = None, queue_limit: int | None = None, *,
                 python: str | None = None, prestart: bool = True,
                 repeat_aggregate: str = "min", seccomp: bool = True,
                 reuse_jails: bool = True) -> None:
        usable = sorted(os.sched_getaffinity(0))
        cores = list(cores) if cores is not None else usable
        if not cores or any(c not in usable for c in cores):
            raise ValueError(f"cores {cores} must be a non-empty subset of usable {usable}")
        slots = len(cores) if slots is None else slots
        if not 1 <= slots <= UID_BLOCK // 2:
            raise ValueError(f"slots must be in [1, {UID_BLOCK // 2}], got {slots}")
        if queue_limit is not None and queue_limit < 0:
            raise ValueError(f"queue_limit must be >= 0, got {queue_limit}")
        if repeat_aggregate not in REPEAT_AGGREGATES:
            raise ValueError(f"repeat_aggregate must be one of {REPEAT_AGGREGATES}")
        options = {"python": python} if python else {}
        self.backend: JailBackend = get_backend(backend, **options)
        self.prestart = prestart
        self.reuse_jails = reuse_jails
        self.repeat_aggregate = repeat_aggregate
        self.seccomp = seccomp
        self.queue_limit = queue_limit
        self.closing = False
        self._queue: queue.Queue = queue.Queue()
        self._outstanding = 0  # submitted and not finished
        self._lock = threading.Lock()
        self._counters: collections.Counter = collections.Counter()
        self._status_counts: collections.Counter = collections.Counter()
        slot_cpus = [[cores[i % len(cores)]] for i in range(slots)]
        try:
            self._cgroups = CgroupTree.create(slot_cpus)
        except CgroupConflict:
            self.backend.release()
            raise
        self.degraded = dict(self._cgroups.degraded)
        if slots > len(cores):
            self.degraded["cores_shared"] = f"{slots} slots on {len(cores)} cores"
        if not self.backend.uid_separation:
            self.degraded["uid_separation"] = "not root: program shares the harness uid"
        if not seccomp or build_filter() is None:
            self.degraded["seccomp"] = "disabled" if not seccomp else "no syscall table here"
        _log_degraded_once(self.degraded)
        self._slots = [_Slot(self, Placement(i, tuple(slot_cpus[i]), self._cgroups.slots[i]
                                             if self._cgroups.version else None))
                       for i in range(slots)]
        for slot in self._slots:
            slot.thread.start()

    def submit(self, program: str, tests: list[TestCase], limits: Limits = DEFAULT_LIMITS, *,
               interface: str = "stdio", checker: str | None = None,
               float_tolerance: float | None = None, repeat_aggregate: str | None = None,
               test_kinds: Sequence[str] | None = None, stop_after_failure: bool = False,
               ) -> concurrent.futures.Future[list[TestResult]]:
        """Queue a job; the Future resolves to one TestResult per test, in order.
        `stop_after_failure` with `test_kinds`: see `RunRequest`."""
        aggregate = repeat_aggregate or self.repeat_aggregate
        job = validate_job(program, tests, limits, interface, checker, float_tolerance,
                           aggregate, test_kinds, stop_after_failure)
        future: concurrent.futures.Future[list[TestResult]] = concurrent.futures.Future()
        if not tests:
            future.set_result([])
            return future
        with self._lock:
            if self.closing:
                raise RuntimeError("LocalPool is closed")
            capacity = len(self._slots) + (self.queue_limit if self.queue_limit is not None
                                            else float("inf"))
            if self._outstanding >= capacity:
                raise QueueFull(f"{len(self._slots)} slots busy and {self.queue_limit} jobs "
                                "waiting")
            self._outstanding += 1
            self._queue.put((job, future))
        return future

    def run(self, program: str, tests: list[TestCase], limits: Limits = DEFAULT_LIMITS, *,
            interface: str = "stdio", checker: str | None = None,
            float_tolerance: float | None = None, repeat_aggregate: str | None = None,
            test_kinds: Sequence[str] | None = None, stop_after_failure: bool = False,
            ) -> list[TestResult]:
        """Blocking `submit`."""
        return self.submit(program, tests, limits, interface=interface, checker=checker,
                           float_tolerance=float_tolerance, repeat_aggregate=repeat_aggregate,
                           test_kinds=test_kinds,
                           stop_after_failure=stop_after_failure).result()

    def _count(self, key: str) -> None:
        with self._lock:
            self._counters[key] += 1

    def _record(self, results: list[TestResult]) -> None:
        with self._lock:
            self._counters["jobs"] += 1
            self._counters["tests"] += len(results)
            self._status_counts.update(r.status.value for r in results)

    def stats(self) -> dict:
        with self._lock:
            counters = dict(self._counters)
            statuses = {s.value: self._status_counts.get(s.value, 0) for s in Status}
            outstanding = self._outstanding
        busy = sum(slot.busy for slot in self._slots)
        return {
            "backend": self.backend.name,
            "slots": len(self._slots),
            "busy": busy,
            "queued": max(0, outstanding - busy),
            "queue_limit": self.queue_limit,
            "cores": [list(slot.placement.cpus) for slot in self._slots],
            "cgroup_version": self._cgroups.version,
            "slot_cpu_s": [slot.cpu_s() for slot in self._slots],
            "degraded": dict(self.degraded),
            "status_counts": statuses,
            "jobs": counters.get("jobs", 0),
            "tests": counters.get("tests", 0),
            "jail_starts": counters.get("jail_starts", 0),
            "jail_start_failures": counters.get("jail_start_failures", 0),
            "harness_lost": counters.get("harness_lost", 0),
        }

    def close(self) -> None:
        """Finish running jobs, cancel queued ones, stop the jails, remove the cgroups."""
        with self._lock:
            if self.closing:
                return
            self.closing = True
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not None and item[1].cancel():
                with self._lock:
                    self._outstanding -= 1
        for _ in self._slots:
            self._queue.put(None)
        for slot in self._slots:
            slot.thread.join()
        self._cgroups.remove()
        self.backend.release()

    def __enter__(self) -> LocalPool:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
