"""The fleet client: balancing across nodes, blob uploads, failover, health probing.

`FleetClient` implements `SandboxClient._execute` over HTTP (API v1, `sandbox_cluster.protocol`):

* **Balancing.** Each batch goes to the healthy node with the fewest of this client's requests
  in flight (ties rotate). Immediate retries of inconclusive tests prefer a node other than
  the ones that produced them.
* **Blobs.** Test data above `inline_limit_bytes` is sent as sha256 references; a node that
  lacks some answers 409 with the list, the client uploads exactly those and resends. After
  three such rounds (a node evicting faster than we upload) the batch is sent inline.
* **Failover, no loss, no duplicates.** A request keeps its request id across nodes. If a node
  dies mid-request (connection refused/reset, 502/503) it is marked down and the same request
  goes to another node; a node that already ran the id answers from its ledger instead of
  running it twice, and the client takes exactly one reply per request, so every test gets
  exactly one result. A health thread probes `/health` every `health_interval_s`: it brings
  nodes back, and after two failed probes it aborts requests still waiting on that node (a
  hung or partitioned node fails over too, not only a dead process).
* **Backpressure.** 429 sends the batch to another node, or waits `Retry-After` when every
  node is full (at most `backpressure_deadline_s`).
* **Slow replies.** A request that gets no reply within `request_timeout_s` on a node that
  still passes its health probes is re-sent to the same node with the same id: it re-joins
  the running execution instead of starting a second one elsewhere.
* **A fleet that is down at connect.** The client waits up to `startup_deadline_s` for one
  node to pass its health probe, then raises `SandboxUnavailable` naming each node's error
  (unless `fallback="local"` serves meanwhile), so a wrong URL is one line, not jobs that each
  wait out the failover deadline.
* What cannot be resolved becomes `infra_error` (inconclusive), never a program verdict: no
  healthy node for `failover_deadline_s`, an unparseable reply ("unknown",
  docs/design/sandbox-timing.md §8 prop. 3), a 500/504 from a node. A 4xx that retrying cannot fix
  raises `SandboxRequestError`.
"""

from __future__ import annotations

import dataclasses
import http.client
import json
import logging
import random
import socket
import threading
import time
import urllib.parse
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from sandbox_cluster import protocol
from sandbox_cluster.api import Status, TestResult
from sandbox_cluster.client import (
    ClientOptions,
    Job,
    SandboxClient,
    SandboxRequestError,
    SandboxUnavailable,
)

log = logging.getLogger(__name__)
_UPLOAD_ROUNDS = 3
_FATAL = {400, 401, 403, 404, 405, 411, 413, 422}
_INLINE_EVERYTHING = 1 << 62


class _Unavailable(Exception):
    """The node cannot take this request now (dead, draining, unreachable): fail over."""


class _SlowReply(Exception):
    """No reply within the request timeout, but the node took the request: it is alive and
    busy (a long queue), so the same request id is sent to it again to re-join the execution
    rather than run it a second time elsewhere. A node that is really hung fails its health
    probes, which abort the wait (then it is `_Unavailable`)."""


class _Backpressure(Exception):
    def __init__(self, retry_after_s: float):
        super().__init__(f"queue full, retry after {retry_after_s} s")
        self.retry_after_s = retry_after_s


class _NodeError(Exception):
    """The node answered but produced no verdicts (500/504): an inconclusive result."""


class _Node:
    """One sandbox node: its health and this client's keep-alive connections to it."""

    def __init__(self, url: str, options: ClientOptions):
        parsed = urllib.parse.urlsplit(url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"connect(): {url!r} is not an http(s)://host[:port] URL")
        self.url = url.rstrip("/")
        self.scheme, self.host = parsed.scheme, parsed.hostname
        self.port = parsed.port or (443 if parsed.scheme == "https" else 80)
        self.prefix = parsed.path
        self.options = options
        self.healthy = True
        self.failed_probes = 0
        self.in_flight = 0
        self.last_error = ""
        self._local = threading.local()
        self._lock = threading.Lock()
        self._active: set[http.client.HTTPConnection] = set()

    def _new_connection(self, timeout: float) -> http.client.HTTPConnection:
        cls = (http.client.HTTPSConnection if self.scheme == "https"
               else http.client.HTTPConnection)
        conn = cls(self.host, self.port, timeout=self.options.connect_timeout_s)
        conn.connect()
        conn.sock.settimeout(timeout)
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return conn

    def request(self, method: str, path: str, body: bytes | None, timeout: float,
                pooled: bool = True) -> tuple[int, Any, bytes]:
        """One HTTP exchange. Transport failures raise `_Unavailable`."""
        headers = {"Content-Type": "application/json" if path.endswith("/run")
                   else "application/octet-stream"}
        if self.options.token:
            headers["Authorization"] = f"Bearer {self.options.token}"
        for fresh in (False, True):
            conn = getattr(self._local, "conn", None) if pooled and not fresh else None
            reused = conn is not None
            tracked = None
            sent = False
            try:
                if conn is None:
                    conn = self._new_connection(timeout)
                else:
                    conn.sock.settimeout(timeout)
                tracked = conn
                with self._lock:
                    self._active.add(conn)
                conn.request(method, self.prefix + path, body=body, headers=headers)
                sent = True
                response = conn.getresponse()
                data = response.read()
                if response.will_close or not pooled:
                    conn.close()
                    conn = None
                if pooled:
                    self._local.conn = conn
                return response.status, response.headers, data
            except (OSError, http.client.HTTPException) as err:
                if conn is not None:
                    conn.close()
                if pooled:
                    self._local.conn = None
                # A keep-alive connection the server closed while idle: retry once, fresh.
                if reused and not fresh and isinstance(err, http.client.RemoteDisconnected
                                                       | BrokenPipeError | ConnectionResetError):
                    continue
                if isinstance(err, TimeoutError) and sent:
                    raise _SlowReply(f"{self.url}: no reply within {timeout} s") from err
                raise _Unavailable(f"{self.url}: {type(err).__name__}: {err}") from err
            finally:
                if tracked is not None:
                    with self._lock:
                        self._active.discard(tracked)
        raise AssertionError("unreachable")

    def abort_in_flight(self) -> None:
        with self._lock:
            active = list(self._active)
        for conn in active:
            try:
                if conn.sock is not None:
                    conn.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class FleetClient(SandboxClient):
    def __init__(self, urls: list[str], options: ClientOptions, fallback_pool: Any = None):
        super().__init__(options)
        if not urls:
            raise ValueError("connect(): urls is empty (pass None for the embedded pool)")
        self.nodes = [_Node(u, options) for u in urls]
        if len({n.url for n in self.nodes}) != len(self.nodes):
            raise ValueError(f"connect(): duplicate node URLs in {urls}")
        self._fallback_pool = fallback_pool
        self._owns_fallback_pool = False
        self._pool_lock = threading.Lock()
        self._cond = threading.Condition()
        self._rotation = 0
        self._stop = threading.Event()
        self._prober = ThreadPoolExecutor(min(8, len(self.nodes)),
                                          thread_name_prefix="sandbox-health")
        self._wait_for_a_node()
        self._health_thread = threading.Thread(target=self._health_loop, daemon=True,
                                               name="sandbox-health")
        self._health_thread.start()

    def _source_name(self) -> str:
        return "fleet"

    # -- health --------------------------------------------------------------------------------
    def health(self) -> list[dict[str, Any]]:
        """This client's view of every node."""
        return [{"url": n.url, "healthy": n.healthy, "in_flight": n.in_flight,
                 "last_error": n.last_error} for n in self.nodes]

    def _probe(self, node: _Node) -> None:
        try:
            status, _, data = node.request("GET", "/health", None,
                                           min(self.options.connect_timeout_s, 5.0),
                                           pooled=False)
            up = status == 200
            node.failed_probes = 0
            if not up:
                node.last_error = f"/health answered {status}: {data[:200]!r}"
        except _Unavailable as err:
            up = False
            node.failed_probes += 1
            node.last_error = str(err)
            if node.failed_probes >= 2:
                node.abort_in_flight()
        self._set_health(node, up)

    def _wait_for_a_node(self) -> None:
        """Probe until one node is healthy, for at most `startup_deadline_s`; then raise
        `SandboxUnavailable` naming every node's last error (a job sent to a fleet that is down
        would wait `failover_deadline_s` and come back inconclusive, for every job). Not with
        `fallback="local"`, whose local pool runs the jobs while no node answers."""
        deadline = time.monotonic() + (self.options.startup_deadline_s or 0.0)
        while True:
            self._probe_all()
            if (any(n.healthy for n in self.nodes) or self.options.startup_deadline_s is None
                    or self.options.fallback == "local"):  # the local pool serves meanwhile
                return
            if time.monotonic() >= deadline:
                self._prober.shutdown(wait=False)
                errors = "; ".join(f"{n.url}: {n.last_error}" for n in self.nodes)
                raise SandboxUnavailable(
                    f"no sandbox node answered /health within "
                    f"{self.options.startup_deadline_s:g} s of connecting ({errors})")
            time.sleep(min(self.options.health_interval_s,
                           max(deadline - time.monotonic(), 0.0)))

    def _probe_all(self) -> None:
        list(self._prober.map(self._probe, self.nodes))

    def _health_loop(self) -> None:
        while not self._stop.wait(self.options.health_interval_s):
            self._probe_all()

    def _set_health(self, node: _Node, up: bool) -> None:
        with self._cond:
            if up and not node.healthy:
                log.info("sandbox node %s is back", node.url)
            if not up and node.healthy:
                log.warning("sandbox node %s is down: %s", node.url, node.last_error)
            node.healthy = up
            if up:
                self._cond.notify_all()

    def _pick(self, prefer_not: set[str]) -> _Node | None:
        with self._cond:
            healthy = [n for n in self.nodes if n.healthy]
            preferred = [n for n in healthy if n.url not in prefer_not] or healthy
            if not preferred:
                return None
            self._rotation += 1
            k = len(preferred)
            ordered = [preferred[(self._rotation + i) % k] for i in range(k)]
            node = min(ordered, key=lambda n: n.in_flight)
            node.in_flight += 1
            return node

    def _release(self, node: _Node) -> None:
        with self._cond:
            node.in_flight -= 1

    # -- execution -----------------------------------------------------------------------------
    def _timeout(self, job: Job, n_tests: int) -> float:
        if self.options.request_timeout_s is not None:
            return self.options.request_timeout_s
        return 120.0 + 2.0 * n_tests * job.limits.repeats * job.limits.time_s

    def _execute(self, job, indices, request_id, avoid):
        request = dataclasses.replace(job.subset(indices), request_id=request_id)
        n = len(indices)
        timeout = self._timeout(job, n)
        prefer_not = set(avoid)
        full: set[str] = set()
        no_node_since = full_since = None
        failovers = 0
        while True:
            node = self._pick(prefer_not | full)
            now = time.monotonic()
            if node is None:
                no_node_since = no_node_since or now
                if now - no_node_since > self.options.failover_deadline_s:
                    return _inconclusive(n, "unavailable", "no healthy sandbox node for "
                                         f"{self.options.failover_deadline_s} s"), "unavailable"
                with self._cond:
                    self._cond.wait(self.options.health_interval_s)
                continue
            no_node_since = None
            try:
                while True:
                    try:
                        return self._run_on(node, request, timeout), node.url
                    except _SlowReply as err:
                        self._count(slow_replies=1)
                        if not node.healthy:  # probes failed meanwhile: fail over
                            raise _Unavailable(str(err)) from err
            except _Backpressure as err:
                self._count(backpressure_waits=1)
                full_since = full_since or now
                if now - full_since > self.options.backpressure_deadline_s:
                    return _inconclusive(n, "unavailable", "every sandbox node stayed full for "
                                         f"{self.options.backpressure_deadline_s} s"), node.url
                if node.url in full:  # every healthy node is full: wait, then try them again
                    # Jitter so that many waiting clients do not come back in lockstep.
                    wait_s = min(max(err.retry_after_s, 0.05), 5.0) * random.uniform(0.5, 1.5)
                    time.sleep(wait_s)
                    full.clear()
                full.add(node.url)
            except _Unavailable as err:
                node.last_error = str(err)
                self._set_health(node, False)
                failovers += 1
                self._count(failovers=1)
                prefer_not.add(node.url)
                log.warning("request %s failed over from %s: %s", request_id, node.url, err)
                if failovers > 4 * len(self.nodes) + 4:
                    return _inconclusive(n, "unavailable", f"gave up after {failovers} failovers: "
                                         f"{err}"), node.url
            except _NodeError as err:
                return _inconclusive(n, "node_error", str(err)), node.url
            except protocol.ProtocolError as err:
                return _inconclusive(n, "unknown", f"unknown (unparseable) reply: {err}"), node.url
            finally:
                self._release(node)

    def _run_on(self, node: _Node, request: protocol.RunRequest,
                timeout: float) -> list[TestResult]:
        inline_limit = self.options.inline_limit_bytes
        for round_index in range(_UPLOAD_ROUNDS + 1):
            if round_index == _UPLOAD_ROUNDS:  # the node evicts faster than we upload
                inline_limit = _INLINE_EVERYTHING
                request = dataclasses.replace(request,
                                              request_id=request.request_id + "~inline")
            body, blobs = protocol.encode_run_request(request, inline_limit)
            status, headers, data = node.request("POST", "/v1/run", json.dumps(body).encode(),
                                                 timeout)
            if status == 200:
                try:
                    reply = json.loads(data)
                except ValueError as err:
                    raise protocol.ProtocolError(f"reply is not JSON: {err}") from err
                return protocol.decode_run_response(reply, request.request_id,
                                                    len(request.tests))
            if status == 409:
                self._upload(node, _json_field(data, "missing", list), blobs, timeout)
                continue
            self._raise_for(node, status, headers, data)
        raise _NodeError(f"{node.url}: still missing blobs after an inline request")

    def _upload(self, node: _Node, missing: list, blobs: dict[str, bytes],
                timeout: float) -> None:
        for digest in missing:
            if digest not in blobs:
                raise protocol.ProtocolError(f"node asks for blob {digest!r} we never sent")
            status, headers, data = node.request("PUT", f"/v1/blobs/{digest}", blobs[digest],
                                                 timeout)
            if status not in (200, 201):
                self._raise_for(node, status, headers, data)

    @staticmethod
    def _raise_for(node: _Node, status: int, headers: Any, data: bytes) -> None:
        message = _json_field(data, "message", str) or data[:300].decode("utf-8", "replace")
        if status == 429:
            try:
                retry_after = float(headers.get("Retry-After", "1"))
            except ValueError:
                retry_after = 1.0
            raise _Backpressure(retry_after)
        if status in (502, 503):
            raise _Unavailable(f"{node.url}: HTTP {status}: {message}")
        if status in _FATAL:
            raise SandboxRequestError(f"{node.url}: HTTP {status}: {message}")
        if status >= 500:
            raise _NodeError(f"{node.url}: HTTP {status}: {message}")
        raise protocol.ProtocolError(f"{node.url}: unexpected HTTP {status}: {message}")

    # -- local fallback + shutdown -------------------------------------------------------------
    def _local_pool(self) -> Any:
        with self._pool_lock:
            if self._fallback_pool is None:
                from sandbox_cluster.pool import LocalPool

                self._fallback_pool = LocalPool()
                self._owns_fallback_pool = True
            return self._fallback_pool

    def close(self) -> None:
        super().close()
        self._stop.set()
        self._health_thread.join(timeout=10)
        self._prober.shutdown(wait=True)
        if self._owns_fallback_pool:
            self._fallback_pool.close()


def _inconclusive(n: int, kind: str, detail: str) -> list[TestResult]:
    """Results the client makes up when no node gave a verdict; `kind` says why (see
    `SandboxClient.stats`), so a monitor can tell unknown replies from dead nodes."""
    return [TestResult(Status.INFRA_ERROR, 0.0, detail=detail, extra={"inconclusive": kind})
            for _ in range(n)]


def _json_field(data: bytes, key: str, kind: type) -> Any:
    try:
        value = json.loads(data).get(key)
    except (ValueError, AttributeError):
        return kind()
    return value if isinstance(value, kind) else kind()
