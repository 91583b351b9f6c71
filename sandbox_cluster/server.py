"""HTTP front of one sandbox node: routes, auth, body limits. The node's behaviour is
`sandbox_cluster.node.NodeService` (validation, idempotency, backpressure, metrics), and
execution is the pool's.

`SandboxServer(pool, ServerConfig(...))` serves the v1 API of `sandbox_cluster.protocol` on a
`ThreadingHTTPServer` (one thread per connection, HTTP/1.1 keep-alive).

Choices (documented for operators):
* **Binding.** Loopback by default. Any other address needs a bearer token (>= 16 characters):
  `ServerConfig` refuses it otherwise. With a token every route except `/health` needs
  `Authorization: Bearer <token>` (compared in constant time); `/health` stays open so
  readiness probes and load balancers need no secret, and it reveals only pool shape.
* **Limits.** Bodies need `Content-Length` (411 otherwise; no chunked uploads), oversize
  bodies get 413 before any byte is read, idle or stalled connections are closed after
  `socket_timeout_s` (30 s by default, `--socket-timeout-s`), and at most `max_connections`
  connections are served at once (one thread each): the next one gets 503 with Retry-After
  and is closed, so slow clients cannot hold every thread.
* **Slow and greedy clients** (slowloris: requests sent a byte at a time, or half sent and
  left). A request's line and headers must be complete within `header_timeout_s` (10 s,
  `--header-timeout-s`) of the moment the server starts waiting for them (the connection's
  accept, or on a keep-alive connection the end of the previous reply, so an idle keep-alive
  connection is closed after it too; the fleet client reconnects): however the bytes trickle
  in, a connection that has not sent its headers by then is closed. Connections are counted
  per client address: one address holds at most `client_connection_limit` of them (by default
  all but a quarter of `max_connections`, `--max-connections-per-client`); beyond, 429 with
  Retry-After before any byte is read. Both hold before any token is checked, so a client
  that fills its share with half-sent requests leaves `/health` answering other addresses at
  once, and its own within `header_timeout_s`. A body that is not JSON the
  node can read (bad syntax, nesting too deep for the parser, an integer beyond CPython's
  4300-digit conversion limit, NaN/Infinity, text that is not valid Unicode) is 400 naming
  the problem. Errors from the stdlib's request parser (a garbage request line, HTTP/2.0)
  are JSON with a proper HTTP/1.1 status line (400, 505). Any unexpected exception becomes a
  500 JSON reply. A malformed request never takes the server down or hangs it.
"""

from __future__ import annotations

import collections
import contextlib
import hmac
import io
import json
import logging
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sandbox_cluster import protocol
from sandbox_cluster.content_store import BlobError, BlobTooLarge, ContentStore, check_digest
from sandbox_cluster.metrics import CONTENT_TYPE, LATENCY_BUCKETS_S
from sandbox_cluster.node import MIB, NodeService, ServerConfig, is_loopback

log = logging.getLogger(__name__)
__all__ = ["MIB", "SandboxServer", "ServerConfig", "is_loopback"]


DEFAULT_CONFIG = ServerConfig()


class SandboxServer:
    """The HTTP server of one node. `start()` serves in a thread; `serve_forever()` blocks."""

    def __init__(self, pool: Any, config: ServerConfig = DEFAULT_CONFIG, *,
                 store: ContentStore | None = None):
        self.config = config
        self.store = store or ContentStore(config.blob_dir, config.blob_budget_bytes,
                                           config.max_blob_bytes)
        self._owns_store = store is None
        self._thread: threading.Thread | None = None
        self.httpd = _HTTPServer((config.host, config.port), _Handler)
        self.httpd.app = self
        self.node = config.node_name or f"{socket.gethostname()}:{self.port}"
        self.service = NodeService(pool, config, self.store, self.node)
        self.metrics = self.service.metrics
        self.m_http = self.metrics.counter("sandbox_http_requests_total",
                                           "HTTP requests by route and code.", ("route", "code"))
        self.m_latency = self.metrics.histogram("sandbox_http_request_seconds",
                                                "HTTP request handling time by route.",
                                                ("route",), buckets=LATENCY_BUCKETS_S)

    @property
    def pool(self) -> Any:
        return self.service.pool

    @property
    def port(self) -> int:
        return self.httpd.server_address[1]

    @property
    def url(self) -> str:
        host = self.config.host
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{self.port}"

    def start(self) -> SandboxServer:
        if self._thread is not None:
            return self
        self._thread = threading.Thread(target=self.serve_forever, name="sandbox-http",
                                        daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        log.info("sandbox node %s serving API %s on %s", self.node, protocol.API_VERSION,
                 self.url)
        self.httpd.serve_forever(poll_interval=0.2)

    def drain(self, timeout_s: float) -> bool:
        """Refuse new runs (503) and wait for running ones; True if all finished in time."""
        return self.service.drain(timeout_s)

    def close(self) -> None:
        """Stop serving (the pool belongs to the caller and stays open)."""
        self.httpd.shutdown()
        self.httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._owns_store:
            self.store.close()

    def __enter__(self) -> SandboxServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _client_key(client_address: Any) -> str:
    """The address connections are counted by (the host part; the port changes per
    connection)."""
    return str(client_address[0] if isinstance(client_address, tuple) else client_address)


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    app: SandboxServer
    _slots: threading.BoundedSemaphore | None = None

    def process_request(self, request, client_address) -> None:
        """One thread per connection, at most `client_connection_limit` per client address
        and `max_connections` in all: beyond, a 429 or 503 JSON reply written here (without a
        thread) and the connection closed."""
        config = self.app.config
        if self._slots is None:  # (only the serving thread gets here)
            self._slots = threading.BoundedSemaphore(config.max_connections)
            self._clients: collections.Counter[str] = collections.Counter()
            self._clients_lock = threading.Lock()
        client = _client_key(client_address)
        with self._clients_lock:
            if not self._slots.acquire(blocking=False):
                refused = (503, "Service Unavailable", "too_many_connections",
                           f"this node serves at most {config.max_connections} connections "
                           "at once; retry later")
            elif self._clients[client] >= config.client_connection_limit:
                self._slots.release()
                refused = (429, "Too Many Requests", "too_many_connections_from_client",
                           f"this node serves at most {config.client_connection_limit} "
                           f"connections from one client address at once; retry later")
            else:
                refused = None
                self._clients[client] += 1
        if refused is not None:
            self._refuse(request, *refused)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._release(client)
            raise

    def process_request_thread(self, request, client_address) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._release(_client_key(client_address))

    def _release(self, client: str) -> None:
        with self._clients_lock:
            self._clients[client] -= 1
            if self._clients[client] <= 0:
                del self._clients[client]
        self._slots.release()

    def _refuse(self, request, code: int, reason: str, error: str, message: str) -> None:
        body = json.dumps(protocol.error_body(error, message)).encode()
        head = (f"HTTP/1.1 {code} {reason}\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\nRetry-After: {self.app.config.retry_after_s}"
                f"\r\nConnection: close\r\n\r\n").encode()
        with contextlib.suppress(OSError):
            request.settimeout(1.0)
            request.sendall(head + body)
        self.shutdown_request(request)


class _RequestReader(io.RawIOBase):
    """A connection's reads (under the handler's buffered `rfile`). While `deadline` is set
    (a request line and headers are awaited) no recv waits past it, so bytes trickled in one
    at a time cannot stretch the wait beyond `header_timeout_s`; otherwise each recv waits at
    most the socket timeout, as the stdlib's reader does."""

    def __init__(self, sock: socket.socket, timeout_s: float) -> None:
        super().__init__()
        self.sock, self.timeout_s = sock, timeout_s
        self.deadline: float | None = None

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.deadline is None:
            return self.sock.recv_into(buffer)
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError("request line and headers not complete before the deadline")
        self.sock.settimeout(min(left, self.timeout_s))
        try:
            return self.sock.recv_into(buffer)
        finally:
            self.sock.settimeout(self.timeout_s)  # writes keep the socket timeout


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _HTTPServer
    server_version = "sandbox-cluster/" + protocol.API_VERSION

    def setup(self) -> None:
        self.timeout = self.server.app.config.socket_timeout_s
        super().setup()
        self.rfile.close()  # the stdlib's reader, replaced by one that keeps the header deadline
        self._reader = _RequestReader(self.connection, self.timeout)
        self.rfile = io.BufferedReader(self._reader)
        # Headers and body go out in separate writes: without NODELAY, Nagle + delayed ACK
        # add ~40 ms to every keep-alive exchange.
        with contextlib.suppress(OSError):
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def handle_one_request(self) -> None:
        # A timeout while the headers are read ends the connection (the stdlib's TimeoutError
        # path); `parse_request` lifts the deadline once they are in.
        self._reader.deadline = time.monotonic() + self.server.app.config.header_timeout_s
        super().handle_one_request()

    def parse_request(self) -> bool:
        try:
            return super().parse_request()
        finally:
            self._reader.deadline = None  # the body is read under the socket timeout alone

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)

    def send_error(self, code: int, message: str | None = None,
                   explain: str | None = None) -> None:
        """Protocol-level errors raised by the stdlib parser (bad request line, unsupported
        method or version) answer JSON like every other error, then close the connection."""
        self.close_connection = True
        if self.request_version == "HTTP/0.9":
            # The parser failed before it knew the version (garbage request line, HTTP/2.0):
            # the stdlib would then send the body alone. We never speak HTTP/0.9; a client
            # gets a status line and headers.
            self.request_version = "HTTP/1.0"
        short, long = self.responses.get(code, ("error", ""))
        self._code = code
        body = json.dumps(protocol.error_body(f"http_{code}", message or short,
                                              explain=explain or long)).encode()
        self.send_response(code, message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Connection", "close")
        self.end_headers()
        self._record_request()
        if self.command != "HEAD" and code >= 200 and code not in (204, 304):
            self.wfile.write(body)

    # -- plumbing ------------------------------------------------------------------------------
    def _reply(self, code: int, body: bytes, content_type: str,
               headers: dict[str, str] | None = None) -> None:
        self._code = code
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self._record_request()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, code: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        self._reply(code, json.dumps(obj).encode(), "application/json", headers)

    def _error(self, code: int, err: str, message: str, **extra: Any) -> None:
        headers = extra.pop("headers", None)
        self._json(code, protocol.error_body(err, message, **extra), headers)

    def _authorized(self) -> bool:
        token = self.server.app.config.token
        if token is None:
            return True
        given = self.headers.get("Authorization", "")
        if given.startswith("Bearer ") and hmac.compare_digest(
                given[len("Bearer "):].encode(), token.encode()):
            return True
        self.close_connection = True  # the body (if any) is not read
        self._error(401, "unauthorized", "missing or wrong bearer token",
                    headers={"WWW-Authenticate": 'Bearer realm="sandbox-cluster"'})
        return False

    def _content_length(self, limit: int) -> int | None:
        raw = self.headers.get("Content-Length")
        if self.headers.get("Transfer-Encoding") or raw is None:
            self.close_connection = True
            self._error(411, "length_required", "send a Content-Length header "
                        "(chunked transfer encoding is not supported)")
            return None
        try:
            length = int(raw)
            if length < 0:
                raise ValueError
        except ValueError:
            self.close_connection = True
            self._error(400, "bad_request", f"Content-Length: not a non-negative integer: {raw!r}")
            return None
        if length > limit:
            self.close_connection = True
            self._error(413, "body_too_large", f"body of {length} bytes exceeds this node's "
                        f"limit of {limit} bytes")
            return None
        return length

    def _record_request(self) -> None:
        """Count the request in the HTTP metrics, once, BEFORE its response body goes out: a
        client that has read its reply and then scrapes /metrics sees its request counted.
        Requests the stdlib rejects before a route is chosen are not counted."""
        route = getattr(self, "_route", None)
        if route is None or self._recorded:
            return
        self._recorded = True
        app = self.server.app
        app.m_http.inc(route=route, code=str(self._code))
        app.m_latency.observe(time.monotonic() - self._started, route=route)

    def _dispatch(self, route: str, action) -> None:
        self._route, self._started, self._recorded = route, time.monotonic(), False
        self._code = 500
        try:
            action()
        except (ConnectionError, TimeoutError):
            self.close_connection = True
        except Exception as err:
            log.exception("unhandled error on %s %s", self.command, self.path)
            self.close_connection = True
            with contextlib.suppress(OSError):
                self._error(500, "internal_error", f"{type(err).__name__}: {err}")
        finally:
            self._record_request()  # a request that ended without a reply (connection lost)
            self._route = None

    # -- routes --------------------------------------------------------------------------------
    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/health":
            self._dispatch("/health", lambda: self._json(*self.server.app.service.health()))
        elif path == "/metrics":
            self._dispatch("/metrics", self._metrics)
        elif path == "/v1/run" or path.startswith("/v1/blobs/"):
            self._dispatch("other", lambda: self._error(405, "method_not_allowed",
                                                        f"GET is not allowed on {path}"))
        else:
            self._dispatch("other", lambda: self._error(404, "not_found", f"no route {path}"))

    def do_POST(self) -> None:
        if self.path == "/v1/run":
            self._dispatch("/v1/run", self._run)
        else:
            self.close_connection = True
            self._dispatch("other", lambda: self._error(404, "not_found",
                                                        f"no POST route {self.path}"))

    def do_PUT(self) -> None:
        if self.path.startswith("/v1/blobs/"):
            self._dispatch("/v1/blobs", self._put_blob)
        else:
            self.close_connection = True
            self._dispatch("other", lambda: self._error(404, "not_found",
                                                        f"no PUT route {self.path}"))

    def do_HEAD(self) -> None:
        if self.path.startswith("/v1/blobs/"):
            self._dispatch("/v1/blobs", self._head_blob)
        else:
            self._dispatch("other", lambda: self._error(404, "not_found",
                                                        f"no HEAD route {self.path}"))

    def _metrics(self) -> None:
        if self._authorized():
            self._reply(200, self.server.app.metrics.render().encode(), CONTENT_TYPE)

    def _digest(self) -> str | None:
        digest = self.path[len("/v1/blobs/"):]
        try:
            return check_digest(digest)
        except ValueError as err:
            self.close_connection = True
            self._error(400, "bad_request", f"blob path: {err}")
            return None

    def _head_blob(self) -> None:
        if not self._authorized() or (digest := self._digest()) is None:
            return
        found = self.server.app.store.has(digest)
        self._reply(200 if found else 404, b"", "application/octet-stream")

    def _put_blob(self) -> None:
        app = self.server.app
        if not self._authorized() or (digest := self._digest()) is None:
            return
        length = self._content_length(app.store.max_blob_bytes)
        if length is None:
            return
        try:
            created = app.store.put_stream(digest, self.rfile, length)
        except BlobTooLarge as err:
            self.close_connection = True
            self._error(413, "blob_too_large", str(err))
            return
        except BlobError as err:  # digest mismatch or truncated upload: nothing stored
            self.close_connection = True
            self._error(400, "bad_blob", str(err))
            return
        self._json(201 if created else 200, {"sha256": digest, "created": created})

    def _run(self) -> None:
        app = self.server.app
        if not self._authorized():
            return
        length = self._content_length(app.config.max_body_bytes)
        if length is None:
            return
        raw = self.rfile.read(length)
        if len(raw) != length:
            self.close_connection = True
            return
        try:
            body = protocol.parse_json_body(raw)
        except protocol.RequestError as err:
            self._error(err.http_status, err.code, str(err))
            return
        try:
            self._json(200, app.service.run(body))
        except protocol.MissingBlobs as err:
            self._error(409, err.code, str(err), missing=err.missing)
        except protocol.RequestError as err:
            headers = ({"Retry-After": str(app.config.retry_after_s)}
                       if err.http_status in (429, 503) else None)
            self._error(err.http_status, err.code, str(err), headers=headers)

