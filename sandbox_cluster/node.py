"""What a sandbox node does, without HTTP: validate, dedupe by request id, run on the pool,
answer health, keep metrics. `sandbox_cluster.server` puts HTTP routes in front of it.

Choices (documented for operators):
* **Backpressure.** The pool's bounded queue is the only queue: `QueueFull` from `submit`
  becomes HTTP 429 with `Retry-After`; nothing is buffered in the node.
* **Idempotency.** Request ids are remembered (in flight, then the last `result_cache_size`
  finished ones for `result_ttl_s`): the same id again attaches to the running execution or
  gets the stored results, so a client retrying after a lost connection never causes a second
  execution here. The same id with different content is refused (422). An execution that the
  pool itself failed (an exception, not a verdict) answers infra_error for every test and is
  forgotten, so a retry runs again.
* **Draining.** `drain()` makes health and new runs answer 503 while running executions
  finish, so a load balancer stops routing before the process exits.

Metrics (Prometheus names): sandbox_slots, sandbox_slots_busy, sandbox_queue_depth,
sandbox_requests_in_flight, sandbox_degraded{feature}, sandbox_test_results_total{status},
sandbox_infra_errors_total, sandbox_test_duration_seconds{status} (histogram),
sandbox_rejected_total{reason}, sandbox_duplicate_requests_total, sandbox_blob_* (store), and
the HTTP layer's sandbox_http_requests_total{route,code} / sandbox_http_request_seconds{route}.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from collections import OrderedDict
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from sandbox_cluster import protocol
from sandbox_cluster.api import Status, TestResult
from sandbox_cluster.content_store import ContentStore
from sandbox_cluster.metrics import Registry
from sandbox_cluster.pool import QueueFull

log = logging.getLogger(__name__)
MIB = 1 << 20


def is_loopback(host: str) -> bool:
    """True when every address `host` resolves to is a loopback address."""
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None)
    except OSError:
        return False
    return bool(infos) and all(ipaddress.ip_address(i[4][0]).is_loopback for i in infos)


@dataclass(frozen=True)
class ServerConfig:
    host: str = "127.0.0.1"
    port: int = 8000  # 0 picks a free port (tests)
    token: str | None = None
    max_body_bytes: int = 256 * MIB  # a run request (inline test data included)
    max_tests_per_request: int = 4096
    blob_dir: str | None = None  # None: a private temporary directory
    blob_budget_bytes: int = 4096 * MIB
    max_blob_bytes: int = 1024 * MIB
    result_cache_size: int = 4096
    result_ttl_s: float = 900.0
    retry_after_s: int = 1
    socket_timeout_s: float = 30.0
    header_timeout_s: float = 10.0  # request line + headers, from when the server waits
    max_connections: int = 256
    max_connections_per_client: int | None = None  # None: a quarter of max_connections kept
    max_request_wait_s: float = 3600.0
    node_name: str | None = None  # default host:port

    def __post_init__(self) -> None:
        checks = [
            (0 <= self.port <= 65535, "port", "must be in [0, 65535]"),
            (self.max_body_bytes > 0, "max_body_bytes", "must be > 0"),
            (self.max_tests_per_request > 0, "max_tests_per_request", "must be > 0"),
            (self.blob_budget_bytes > 0, "blob_budget_bytes", "must be > 0"),
            (self.max_blob_bytes > 0, "max_blob_bytes", "must be > 0"),
            (self.result_cache_size >= 0, "result_cache_size", "must be >= 0"),
            (self.result_ttl_s >= 0, "result_ttl_s", "must be >= 0"),
            (self.retry_after_s >= 0, "retry_after_s", "must be >= 0"),
            (self.socket_timeout_s > 0, "socket_timeout_s", "must be > 0"),
            (self.header_timeout_s > 0, "header_timeout_s", "must be > 0"),
            (self.max_connections > 0, "max_connections", "must be > 0"),
            (self.max_connections_per_client is None or self.max_connections_per_client > 0,
             "max_connections_per_client", "must be > 0"),
            (self.max_request_wait_s > 0, "max_request_wait_s", "must be > 0"),
            (self.token is None or len(self.token) >= 16, "token",
             "must be at least 16 characters"),
        ]
        for ok, key, message in checks:
            if not ok:
                raise ValueError(f"ServerConfig.{key}: {message}")
        if self.token is None and not is_loopback(self.host):
            raise ValueError(f"ServerConfig.host: binding to {self.host!r} (not loopback) "
                             "requires a bearer token (--token-file or SANDBOX_CLUSTER_TOKEN)")

    @property
    def client_connection_limit(self) -> int:
        """Connections one client address may hold at once: `max_connections_per_client`, by
        default all but a quarter of `max_connections` (at least one), so a single client,
        however slow, leaves room for health probes and other clients."""
        if self.max_connections_per_client is not None:
            return min(self.max_connections_per_client, self.max_connections)
        return max(1, self.max_connections - max(1, self.max_connections // 4))



class _Ledger:
    """request id -> (content fingerprint, future): in-flight and recently finished runs."""

    def __init__(self, capacity: int, ttl_s: float):
        self.capacity, self.ttl_s = capacity, ttl_s
        self._lock = threading.Lock()
        self._entries: OrderedDict[str, tuple[str, Future, float]] = OrderedDict()

    def claim(self, request_id: str, fingerprint: str) -> tuple[Future, bool]:
        """The future for `request_id` and whether the caller must start the execution."""
        now = time.monotonic()
        with self._lock:
            self._expire(now)
            if request_id in self._entries:
                known, future, _ = self._entries[request_id]
                if known != fingerprint:
                    raise protocol.RequestError(
                        f"request_id: {request_id!r} was already used for a different request",
                        http_status=422, code="request_id_reused")
                return future, False
            future: Future = Future()
            self._entries[request_id] = (fingerprint, future, now)
            return future, True

    def forget(self, request_id: str) -> None:
        with self._lock:
            self._entries.pop(request_id, None)

    def in_flight(self) -> int:
        with self._lock:
            return sum(not f.done() for _, f, _ in self._entries.values())

    def _expire(self, now: float) -> None:
        finished = [k for k, (_, f, t) in self._entries.items() if f.done()]
        overflow = len(finished) - self.capacity
        for key in finished:
            if overflow > 0 or now - self._entries[key][2] > self.ttl_s:
                del self._entries[key]
                overflow -= 1



class NodeService:
    """One node's behaviour over `pool`; thread-safe (HTTP handler threads call it)."""

    def __init__(self, pool: Any, config: ServerConfig, store: ContentStore, name: str):
        self.pool = pool
        self.config = config
        self.store = store
        self.name = name
        self.ledger = _Ledger(config.result_cache_size, config.result_ttl_s)
        self.started = time.time()
        self.draining = threading.Event()
        self.metrics = Registry()
        self._register_metrics()

    def drain(self, timeout_s: float) -> bool:
        """Refuse new runs and wait for running ones; True if all finished in time."""
        self.draining.set()
        deadline = time.monotonic() + timeout_s
        while self.ledger.in_flight() and time.monotonic() < deadline:
            time.sleep(0.05)
        return self.ledger.in_flight() == 0

    def pool_stats(self) -> dict[str, Any]:
        try:
            return dict(self.pool.stats())
        except Exception as err:  # health must answer even if the pool misbehaves
            return {"error": repr(err)}

    def health(self) -> tuple[int, dict[str, Any]]:
        stats = self.pool_stats()
        status = "draining" if self.draining.is_set() else ("error" if "error" in stats
                                                            else "ok")
        body = {"status": status, "api": protocol.API_VERSION, "node": self.name,
                "uptime_s": round(time.time() - self.started, 3),
                "auth": self.config.token is not None,
                **{k: stats.get(k) for k in ("slots", "busy", "queued", "backend")},
                "degraded": stats.get("degraded") or stats.get("degraded_features") or []}
        return (200 if status == "ok" else 503), body

    def run(self, body: Any) -> dict[str, Any]:
        """Execute (or join) one RunRequest body; raises protocol.RequestError."""
        if self.draining.is_set():
            raise protocol.RequestError("node is draining; send the request elsewhere",
                                        http_status=503, code="draining")
        request = protocol.decode_run_request(body, self.store.get,
                                              self.config.max_tests_per_request)
        future, is_new = self.ledger.claim(request.request_id,
                                           protocol.request_fingerprint(body))
        if is_new:
            self._start(request, future)
        else:
            self.m_duplicates.inc()
        try:
            results = future.result(timeout=self.config.max_request_wait_s)
        except TimeoutError:
            raise protocol.RequestError(
                f"no verdict after {self.config.max_request_wait_s} s", http_status=504,
                code="execution_timeout") from None
        except _Rejected as err:
            raise protocol.RequestError(str(err), http_status=429, code="queue_full") from None
        return protocol.encode_run_response(request.request_id, self.name, results)

    def _start(self, request: protocol.RunRequest, future: Future) -> None:
        try:
            pool_future = self.pool.submit(
                request.program, list(request.tests), request.limits,
                interface=request.interface, checker=request.checker,
                float_tolerance=request.float_tolerance,
                repeat_aggregate=request.repeat_aggregate, test_kinds=request.test_kinds,
                stop_after_failure=request.stop_after_failure)
        except QueueFull as err:
            self.ledger.forget(request.request_id)
            self.m_rejected.inc(reason="queue_full")
            future.set_exception(_Rejected(f"queue full: {err}"))
            return
        except Exception as err:
            self.ledger.forget(request.request_id)
            future.set_result(self._pool_failure(request, err))
            return

        def finished(done: Future) -> None:
            try:
                results = list(done.result())
                if len(results) != len(request.tests):
                    raise RuntimeError(f"pool returned {len(results)} results for "
                                       f"{len(request.tests)} tests")
            except Exception as err:
                self.ledger.forget(request.request_id)
                results = self._pool_failure(request, err)
            self._record(results)
            future.set_result(results)

        pool_future.add_done_callback(finished)

    def _pool_failure(self, request: protocol.RunRequest, err: Exception) -> list[TestResult]:
        log.exception("pool failed on request %s", request.request_id, exc_info=err)
        return [TestResult.infra_error(f"pool error: {err!r}") for _ in request.tests]

    def _record(self, results: list[TestResult]) -> None:
        for result in results:
            status = result.status.value
            self.m_results.inc(status=status)
            if result.status is Status.INFRA_ERROR:
                self.m_infra.inc()
            else:
                self.m_durations.observe(result.duration_s, status=status)

    def _register_metrics(self) -> None:
        m = self.metrics
        stat = self.pool_stats
        m.gauge("sandbox_up", "1 while the node serves (0 once draining).",
                callback=lambda: 0.0 if self.draining.is_set() else 1.0)
        m.gauge("sandbox_slots", "Execution slots (one pinned core each).",
                callback=lambda: float(stat().get("slots") or 0))
        m.gauge("sandbox_slots_busy", "Slots running a program now.",
                callback=lambda: float(stat().get("busy") or 0))
        m.gauge("sandbox_queue_depth", "Requests waiting for a slot.",
                callback=lambda: float(stat().get("queued") or 0))
        m.gauge("sandbox_requests_in_flight", "Run requests accepted and not finished.",
                callback=lambda: float(self.ledger.in_flight()))
        m.gauge("sandbox_degraded", "1 per isolation feature running in degraded mode.",
                ("feature",), callback=lambda: [((str(f),), 1.0) for f in
                                                _degraded_names(stat())])
        self.m_results = m.counter("sandbox_test_results_total",
                                   "Test executions finished, by status.", ("status",))
        self.m_infra = m.counter("sandbox_infra_errors_total",
                                 "Tests without a verdict because the sandbox failed.")
        self.m_durations = m.histogram("sandbox_test_duration_seconds",
                                       "Measured test durations (infra errors excluded).",
                                       ("status",))
        self.m_rejected = m.counter("sandbox_rejected_total", "Run requests refused, by reason.",
                                    ("reason",))
        self.m_duplicates = m.counter("sandbox_duplicate_requests_total",
                                      "Run requests answered from an earlier execution of the "
                                      "same request id (client retries).")
        for name, field, help_text in [
            ("sandbox_blob_bytes", "bytes", "Bytes held by the blob store."),
            ("sandbox_blob_count", "blobs", "Blobs held by the blob store."),
            ("sandbox_blob_budget_bytes", "budget_bytes", "Disk budget of the blob store."),
        ]:
            m.gauge(name, help_text, callback=lambda f=field: float(
                getattr(self.store.stats(), f)))
        for name, field, help_text in [
            ("sandbox_blob_hits_total", "hits", "Blob lookups served from the store."),
            ("sandbox_blob_misses_total", "misses", "Blob lookups that found nothing (409)."),
            ("sandbox_blob_uploads_total", "uploads", "Blobs stored."),
            ("sandbox_blob_evictions_total", "evictions", "Blobs evicted for the budget."),
        ]:
            m.counter(name, help_text, callback=lambda f=field: float(
                getattr(self.store.stats(), f)))


class _Rejected(Exception):
    """The pool's queue was full (becomes 429)."""


def _degraded_names(stats: dict[str, Any]) -> list[str]:
    degraded = stats.get("degraded") or stats.get("degraded_features") or []
    if isinstance(degraded, dict):
        return sorted(k for k, v in degraded.items() if v)
    return sorted(str(d) for d in degraded)

