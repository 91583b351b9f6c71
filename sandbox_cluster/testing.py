"""Test doubles of the sandbox, shipped for this project's tests and for users' tests: a pool
that "runs" programs by simple rules, a scripted pool and a misbehaving HTTP node.

    from sandbox_cluster.testing import FakePool
    client = connect(pool=FakePool())      # no jail, deterministic verdicts

`FakePool` has `LocalPool`'s interface (run / submit / stats / close, `QueueFull` when its
queue is full) but executes nothing: the program text names a behaviour, so failover,
retry and duplication tests are deterministic and need no jail.

Programs:
    "echo"          stdout = input; success if it matches `expected` (or none), else wrong_answer
    "sleep S"       sleep S seconds per test, then echo
    "wait"          block until `pool.gate` is set, then echo (fills slots for 429 tests)
    "by_input"      the input names the verdict: "STATUS[:DURATION][*K][#TAG]"; with "*K" the
                    first K executions of that input on this pool are infra_error; "#TAG" is
                    ignored (it makes otherwise equal inputs distinct)
    "raise"         the pool itself fails (submit's future raises)
    anything else   runtime_error
Every execution is recorded in `pool.executions` as (program, input) for duplicate counting.

`ScriptedPool` returns fixed results per input (the local fallback pool of test_fallback.py);
`MisbehavingNode` is an HTTP node that drops or garbles every run request; `HashSandbox` is a
client double whose verdict is a hash of the program text (the training loop's tests and
benchmarks: groups carry a signal without a trained model).
"""

from __future__ import annotations

import threading
import time
import zlib
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor

from sandbox_cluster.api import Limits, Status, TestCase, TestResult
from sandbox_cluster.pool import QueueFull  # the real pool's, mapped to 429 by the server

DEFAULT_LIMITS = Limits()


def _text(data: str | bytes | None) -> str | None:
    return data.decode() if isinstance(data, bytes) else data


class FakePool:
    def __init__(self, slots: int = 2, queue_limit: int | None = None, broken: bool = False):
        self.slots = slots
        self.queue_limit = queue_limit
        self.broken = broken  # every test comes back infra_error
        self.gate = threading.Event()
        self.executions: list[tuple[str, str]] = []
        self.calls = 0
        self._seen: Counter[tuple[str, str]] = Counter()
        self._lock = threading.Lock()
        self._queued = 0
        self._busy = 0
        self._status_counts: Counter[str] = Counter()
        self._executor = ThreadPoolExecutor(slots, thread_name_prefix="fake-pool")

    # -- LocalPool interface ---------------------------------------------------------------------
    def submit(self, program: str, tests: list[TestCase], limits: Limits = DEFAULT_LIMITS, *,
               interface: str = "stdio", checker: str | None = None,
               float_tolerance: float | None = None, repeat_aggregate: str | None = None,
               test_kinds=None, stop_after_failure: bool = False) -> Future:
        if stop_after_failure:
            raise NotImplementedError("this fake pool runs every test (no stop_after_failure)")
        with self._lock:
            # Like LocalPool: free slots take work at once, then up to queue_limit may wait.
            if (self.queue_limit is not None
                    and self._queued + self._busy >= self.slots + self.queue_limit):
                raise QueueFull(f"{self._queued} requests queued (limit {self.queue_limit})")
            self._queued += 1
            self.calls += 1
        return self._executor.submit(self._run, program, list(tests), limits)

    def run(self, program: str, tests: list[TestCase], limits: Limits = DEFAULT_LIMITS, **kw):
        return self.submit(program, tests, limits, **kw).result()

    def stats(self) -> dict:
        with self._lock:
            return {"slots": self.slots, "busy": self._busy, "queued": self._queued,
                    "backend": "fake", "degraded": ["cpuset"],
                    "status_counts": dict(self._status_counts)}

    def close(self) -> None:
        self.gate.set()
        self._executor.shutdown(wait=True)

    # -- behaviour -------------------------------------------------------------------------------
    def _run(self, program: str, tests: list[TestCase], limits: Limits) -> list[TestResult]:
        with self._lock:
            self._queued -= 1
            self._busy += 1
        try:
            if program == "raise":
                raise RuntimeError("fake pool failure")
            results = [self._one(program, t, limits) for t in tests]
            with self._lock:
                self._status_counts.update(r.status.value for r in results)
            return results
        finally:
            with self._lock:
                self._busy -= 1

    def _one(self, program: str, test: TestCase, limits: Limits) -> TestResult:
        text = _text(test.input) or ""
        with self._lock:
            self.executions.append((program, text))
            self._seen[(program, text)] += 1
            seen = self._seen[(program, text)]
        if self.broken:
            return TestResult.infra_error("fake node is broken")
        if program.startswith("sleep "):
            time.sleep(float(program.split()[1]))
            program = "echo"
        if program == "wait":
            self.gate.wait()
            program = "echo"
        if program == "echo":
            expected = _text(test.expected)
            ok = expected is None or expected.split() == text.split()
            return TestResult(Status.SUCCESS if ok else Status.WRONG_ANSWER,
                              duration_s=0.001 * (1 + len(text) % 7), stdout=text.encode())
        if program == "by_input":
            spec, _, failures = text.split("#")[0].partition("*")
            if failures and seen <= int(failures):
                return TestResult.infra_error(f"fake transient failure {seen}/{failures}")
            status, _, duration = spec.partition(":")
            status = Status(status)
            if status is Status.INFRA_ERROR:
                return TestResult.infra_error("fake persistent failure")
            if status is Status.TIMEOUT:
                return TestResult(status, limits.time_s)
            return TestResult(status, float(duration or 0.01))
        return TestResult(Status.RUNTIME_ERROR, 0.001, stderr=f"unknown program {program!r}")


class ScriptedPool:
    """A pool whose verdict per test input is fixed by `script` (input text -> TestResult).

    Used as the local fallback pool: it records which inputs it was asked to run.
    """

    def __init__(self, script: dict[str, TestResult]):
        self.script = script
        self.ran: list[str] = []
        self.closed = False

    def run(self, program, tests, limits=DEFAULT_LIMITS, **kw) -> list[TestResult]:
        self.ran += [_text(t.input) for t in tests]
        return [self.script[_text(t.input)] for t in tests]

    def submit(self, program, tests, limits=DEFAULT_LIMITS, **kw) -> Future:
        future: Future = Future()
        future.set_result(self.run(program, tests, limits, **kw))
        return future

    def stats(self) -> dict:
        return {"slots": 1, "busy": 0, "queued": 0, "backend": "scripted"}

    def close(self) -> None:
        self.closed = True


class MisbehavingNode:
    """An HTTP node that answers `/health` with 200 but mishandles every `/v1/run`.

    mode "die":     read the request, then drop the connection without replying (a node that
                    died mid-request);
    mode "garbage": reply 200 with a body that is not a RunResponse (an "unknown" result).
    The request ids it saw are kept in `seen`.
    """

    def __init__(self, mode: str):
        import json
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        node = self
        self.mode = mode
        self.seen: list[str] = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args):
                pass

            def do_GET(self):
                body = b'{"status": "ok"}'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self):
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                node.seen.append(request["request_id"])
                if node.mode == "die":
                    self.close_connection = True
                    return
                body = b'{"request_id": "' + request["request_id"].encode() + b'", "res'
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


class HashSandbox:
    """A client double (`submit`/`close`): success on every test when crc32(program) is even,
    else wrong answer on every test; 1 ms a test, timed on the "embedded" node ("fleet")."""

    def submit(self, program, tests, limits, **options):
        status = Status.SUCCESS if zlib.crc32(program.encode()) % 2 == 0 else Status.WRONG_ANSWER
        future = Future()
        future.set_result([TestResult(status, 0.001, extra={"timing": "fleet",
                                                            "node": "embedded"})] * len(tests))
        return future

    def close(self):
        pass
