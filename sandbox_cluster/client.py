"""The client pipeline behind `connect()` (`sandbox_cluster.connecting`): how callers run
programs, on an embedded pool or on a sandbox fleet (`fleet.FleetClient`, a subclass).

    sb = connect()                                  # in-process LocalPool (CPU demo, tests)
    sb = connect(["http://h1:8000", "http://h2:8000"], fallback="local")
    results = sb.run(program, tests, limits)        # one TestResult per test, same order
    future = sb.submit(program, tests, limits)      # concurrent.futures.Future
    results = await sb.run_async(program, tests, limits)
    sb.close()

Both clients share one resolution pipeline per call (`SandboxClient._resolve`):

1. execute the batch (`_execute`: the pool, or a fleet node with balancing and failover);
2. **immediate short-budget retries**: tests that came back inconclusive (infra_error, or a
   reply that could not be parsed) are re-executed right away, up to `retry_budget` more
   times and never after `retry_deadline_s` (docs/design/sandbox-timing.md §1.13: long retries make
   durations within a prompt group incomparable). Retries go to another node when there is one;
3. **local fallback** (fleet only, `fallback="local"`): whatever is still inconclusive may be
   rerun on this machine under the rules of `sandbox_cluster.fallback` (verdicts only, never
   timing; early stop on a definitive hard failure).

Every result carries provenance in `extra` (`node`, `attempts`, `timing` in the words of
`api.TIMINGS`: `fleet` where the duration was measured on the node that ran it, `none` where
there is none, the fallback's own `cap`/`none`; see `fallback`; inconclusive results also say
why in `inconclusive`), and `stats()` counts what the pipeline
did for the health metrics of docs/design/sandbox-timing.md §1.12: fleet-only requests (the
"CES-only" rate), retries, fallbacks, failovers, and inconclusive attempts by kind, so that a burst
of unparseable replies shows up even while hard infra errors stay at zero
(docs/design/sandbox-timing.md §4, Table 29).

Defaults chosen where the paper is silent: `retry_budget=2`, `retry_deadline_s=30`,
fallback off (calibration campaigns must run without it,
docs/design/sandbox-timing.md §1.18).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import threading
import time
import uuid
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from sandbox_cluster import fallback as rules
from sandbox_cluster.api import (
    Limits,
    RunRequest,
    Status,
    TestCase,
    TestResult,
)

TOKEN_ENV = "SANDBOX_CLUSTER_TOKEN"
# Why a test attempt had no verdict: the node's own infra_error, a reply we could not parse
# ("unknown", docs/design/sandbox-timing.md §1.9), a node error reply (500/504), or no node to ask.
INCONCLUSIVE_KINDS = ("infra_error", "unknown", "node_error", "unavailable")
DEFAULT_LIMITS = Limits()


class SandboxRequestError(Exception):
    """The fleet refused a request as invalid (400/401/413/422): a caller or config bug that
    retrying cannot fix. The message is the node's, naming the field."""


class SandboxUnavailable(Exception):
    """No node of a fleet answered its health probe within `ClientOptions.startup_deadline_s`
    of connecting: a wrong URL or a fleet that is down, named before any work is sent (later
    outages make tests inconclusive instead, `failover_deadline_s`)."""


@dataclass(frozen=True)
class ClientOptions:
    retry_budget: int = 2  # immediate re-executions of inconclusive tests
    retry_deadline_s: float = 30.0  # no retry round starts after this (from the call)
    fallback: str = "none"  # "none" | "local" (fleet only)
    max_in_flight: int = 64  # calls executing at once (more wait in submit's queue)
    # fleet only
    token: str | None = None  # default: $SANDBOX_CLUSTER_TOKEN
    inline_limit_bytes: int = 4096  # larger test data travels once as a blob
    connect_timeout_s: float = 5.0
    request_timeout_s: float | None = None  # None: derived from the batch's limits
    health_interval_s: float = 2.0
    failover_deadline_s: float = 120.0  # max wait for any healthy node
    # connect: max wait for a first healthy node, then SandboxUnavailable (None: do not wait,
    # for a client started before its fleet; jobs then wait failover_deadline_s)
    startup_deadline_s: float | None = 30.0
    backpressure_deadline_s: float = 600.0  # max wait while every node answers 429

    def __post_init__(self) -> None:
        checks = [
            (self.retry_budget >= 0, "retry_budget", "must be >= 0"),
            (self.retry_deadline_s >= 0, "retry_deadline_s", "must be >= 0"),
            (self.fallback in ("none", "local"), "fallback", "must be 'none' or 'local'"),
            (self.max_in_flight >= 1, "max_in_flight", "must be >= 1"),
            (self.inline_limit_bytes >= 0, "inline_limit_bytes", "must be >= 0"),
            (self.connect_timeout_s > 0, "connect_timeout_s", "must be > 0"),
            (self.request_timeout_s is None or self.request_timeout_s > 0,
             "request_timeout_s", "must be > 0 or None"),
            (self.health_interval_s > 0, "health_interval_s", "must be > 0"),
            (self.failover_deadline_s >= 0, "failover_deadline_s", "must be >= 0"),
            (self.startup_deadline_s is None or self.startup_deadline_s >= 0,
             "startup_deadline_s", "must be >= 0 or None"),
            (self.backpressure_deadline_s >= 0, "backpressure_deadline_s", "must be >= 0"),
        ]
        for ok, key, message in checks:
            if not ok:
                raise ValueError(f"connect(): {key} {message}")


# One call of the client: the sandbox's one run request (`api.RunRequest`), its
# `request_id` the call's id (each execution round adds a suffix).
Job = RunRequest


class SandboxClient:
    """Shared API and pipeline; subclasses provide `_execute` and `_source_name`."""

    def __init__(self, options: ClientOptions):
        self.options = options
        self._executor = ThreadPoolExecutor(options.max_in_flight,
                                            thread_name_prefix="sandbox-client")
        self._closed = False
        self._stats_lock = threading.Lock()
        self._stats = dict.fromkeys(
            ["requests", "requests_remote_only", "requests_with_fallback",
             "requests_inconclusive", "tests", "tests_retried", "tests_fallback",
             "tests_fallback_skipped", "tests_inconclusive", "failovers",
             "backpressure_waits", "slow_replies", *(f"inconclusive_{k}" for k in INCONCLUSIVE_KINDS)], 0)

    # -- public API ----------------------------------------------------------------------------
    def submit(self, program: str, tests: Sequence[TestCase], limits: Limits = DEFAULT_LIMITS, *,
               interface: str = "stdio", checker: str | None = None,
               float_tolerance: float | None = None, repeat_aggregate: str | None = None,
               test_kinds: Sequence[str] | None = None,
               stop_after_failure: bool = False) -> Future[list[TestResult]]:
        """Start a call; the future resolves to one TestResult per test, in order.

        `interface`, `checker`, `float_tolerance` and `repeat_aggregate` are the pool's options;
        `test_kinds` (T0/T+/TO or correctness/optimization, one per test) drives the fallback
        rules (see `sandbox_cluster.fallback`) and `stop_after_failure` (`RunRequest`).
        """
        if self._closed:
            raise RuntimeError("this sandbox client is closed")
        job = self._make_job(program, tests, limits, interface, checker, float_tolerance,
                             repeat_aggregate, test_kinds, stop_after_failure)
        return self._executor.submit(self._resolve, job)

    def run(self, program: str, tests: Sequence[TestCase], limits: Limits = DEFAULT_LIMITS,
            **options: Any) -> list[TestResult]:
        """Blocking call: one TestResult per test, in order."""
        return self.submit(program, tests, limits, **options).result()

    async def run_async(self, program: str, tests: Sequence[TestCase],
                        limits: Limits = DEFAULT_LIMITS, **options: Any) -> list[TestResult]:
        return await asyncio.wrap_future(self.submit(program, tests, limits, **options))

    def stats(self) -> dict[str, int]:
        """Counters since the client started (sum over calls):

        requests, tests; requests_remote_only (every test resolved by the fleet, no local
        fallback: the paper's "CES-only" numerator), requests_with_fallback,
        requests_inconclusive / tests_inconclusive (still no verdict at the end);
        tests_retried (immediate re-executions), tests_fallback, tests_fallback_skipped (early
        stop); inconclusive_<kind> per attempt (infra_error, unknown, node_error, unavailable);
        failovers, slow_replies, backpressure_waits (fleet transport events).
        """
        with self._stats_lock:
            return dict(self._stats)

    def close(self) -> None:
        """Finish every submitted call, then release threads (and owned pools)."""
        self._closed = True
        self._executor.shutdown(wait=True)

    def __enter__(self) -> SandboxClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- pipeline ------------------------------------------------------------------------------
    def _make_job(self, program, tests, limits, interface, checker, float_tolerance,
                  repeat_aggregate, test_kinds, stop_after_failure=False) -> Job:
        return RunRequest(program, tuple(tests), limits, interface, checker, float_tolerance,
                          repeat_aggregate, test_kinds, request_id=uuid.uuid4().hex,
                          stop_after_failure=stop_after_failure)

    def _count(self, **increments: int) -> None:
        with self._stats_lock:
            for key, value in increments.items():
                self._stats[key] += value

    def _resolve(self, job: Job) -> list[TestResult]:
        n = len(job.tests)
        self._count(requests=1, tests=n)
        if n == 0:
            return []
        results: list[TestResult | None] = [None] * n
        attempts = [0] * n
        pending = list(range(n))
        deadline = time.monotonic() + self.options.retry_deadline_s
        avoid: set[str] = set()
        for round_index in range(self.options.retry_budget + 1):
            if round_index and time.monotonic() > deadline:
                break
            if round_index:
                self._count(tests_retried=len(pending))
            batch, source = self._execute(job, pending, f"{job.request_id}.{round_index}", avoid)
            for i, result in zip(pending, batch):
                attempts[i] += 1
                results[i] = _annotate(result, source, attempts[i])
            pending = [i for i in pending if not results[i].status.is_conclusive]
            self._count(**collections.Counter(
                f"inconclusive_{results[i].extra['inconclusive']}" for i in pending))
            if not pending:
                break
            avoid.add(source)
        final = [r for r in results if r is not None]
        assert len(final) == n
        if pending and self.options.fallback == "local":
            final = self._fallback(job, final, pending)
        still = rules.inconclusive_indices(final)
        used_local = any(r.extra.get("fallback") for r in final)
        self._count(requests_remote_only=int(not still and not used_local and
                                             self._source_name() != "embedded"),
                    requests_with_fallback=int(used_local),
                    requests_inconclusive=int(bool(still)), tests_inconclusive=len(still))
        return final

    def _fallback(self, job: Job, results: list[TestResult],
                  pending: list[int]) -> list[TestResult]:
        reason = rules.early_stop_reason(results)
        if reason is not None:
            self._count(tests_fallback_skipped=len(pending))
            return [rules.skipped(r, reason) if i in pending else r
                    for i, r in enumerate(results)]
        self._count(tests_fallback=len(pending))
        try:
            retry = job.subset(pending)
            local = self._local_pool().run(job.program, list(retry.tests), job.limits,
                                           **retry.pool_options())
            if len(local) != len(pending):
                raise RuntimeError(f"local pool returned {len(local)} results for "
                                   f"{len(pending)} tests")
        except Exception as err:  # the fleet's results must survive a broken local pool
            local = [TestResult.infra_error(f"local pool error: {err!r}") for _ in pending]
        kinds = rules.normalize_test_kinds(job.test_kinds, len(job.tests))
        return rules.merge(results, dict(zip(pending, local)), kinds, job.limits)

    # -- subclass hooks ------------------------------------------------------------------------
    def _execute(self, job: Job, indices: list[int], request_id: str,
                 avoid: set[str]) -> tuple[list[TestResult], str]:
        """Run `job`'s tests at `indices`; return their results and where they ran."""
        raise NotImplementedError

    def _source_name(self) -> str:
        raise NotImplementedError

    def _local_pool(self) -> Any:
        raise RuntimeError("local fallback needs a fleet client")


def _annotate(result: TestResult, source: str, attempts: int) -> TestResult:
    provenance = {"node": source, "attempts": attempts, "timing": "fleet"}
    if result.status is Status.NOT_RUN:
        provenance["timing"] = "none"
    if result.status is Status.INFRA_ERROR:
        provenance |= {"timing": "none",
                       "inconclusive": result.extra.get("inconclusive", "infra_error")}
    return dataclasses.replace(result, extra={**result.extra, **provenance})


class EmbeddedClient(SandboxClient):
    """Runs everything on an in-process `LocalPool` (owned unless one was passed in)."""

    def __init__(self, pool: Any, options: ClientOptions, owns_pool: bool):
        super().__init__(options)
        self.pool = pool
        self._owns_pool = owns_pool

    def _source_name(self) -> str:
        return "embedded"

    def _execute(self, job, indices, request_id, avoid):
        try:
            part = job.subset(indices)
            results = self.pool.run(job.program, list(part.tests), job.limits,
                                    **part.pool_options())
        except Exception as err:  # the pool failing is an inconclusive result, not a verdict
            results = [TestResult.infra_error(f"pool error: {err!r}") for _ in indices]
        if len(results) != len(indices):
            results = [TestResult.infra_error(f"pool returned {len(results)} results for "
                                              f"{len(indices)} tests") for _ in indices]
        return list(results), "embedded"

    def close(self) -> None:
        super().close()
        if self._owns_pool:
            self.pool.close()
