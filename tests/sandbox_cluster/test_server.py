"""HTTP server: routes, validation, 429 backpressure, blobs, auth, idempotency, health/metrics.

The server runs in-process on a free port over `FakePool` (sandbox_cluster/testing.py), so
these tests exercise the HTTP layer deterministically; test_load.py runs the real pool.
"""

import http.client
import json
import socket
import threading
import time

import pytest

from sandbox_cluster.content_store import sha256_hex
from sandbox_cluster.server import SandboxServer, ServerConfig, is_loopback
from sandbox_cluster.testing import FakePool
from tests.sandbox_cluster.test_metrics import parse_exposition

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def pool():
    pool = FakePool(slots=2)
    yield pool
    pool.close()


def start(pool, **config) -> SandboxServer:
    return SandboxServer(pool, ServerConfig(port=0, **config)).start()


@pytest.fixture
def server(pool):
    with start(pool) as srv:
        yield srv


def call(srv, method, path, body=None, headers=None, timeout=30):
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout)
    if isinstance(body, dict | list):
        body = json.dumps(body).encode()
    conn.request(method, path, body=body, headers=headers or {})
    response = conn.getresponse()
    data = response.read()
    conn.close()
    parsed = json.loads(data) if data and response.getheader("Content-Type") == "application/json" \
        else data
    return response.status, response.headers, parsed


def run_body(request_id="r1", tests=None, program="echo", **extra):
    tests = tests if tests is not None else [{"input": "1 2", "expected": "1 2"},
                                             {"input": "3", "expected": "4"}]
    return {"request_id": request_id, "program": program, "tests": tests, **extra}


def test_run_returns_one_result_per_test_in_order(server):
    status, _, body = call(server, "POST", "/v1/run", run_body())
    assert status == 200
    assert body["request_id"] == "r1" and body["api"] == "v1"
    assert [r["status"] for r in body["results"]] == ["success", "wrong_answer"]
    assert body["node"] == server.node


def test_a_request_is_counted_before_its_reply_goes_out(server, monkeypatch):
    """A client that has read its reply and then scrapes /metrics finds its request counted.
    The counter is slowed down, so that a count made after the reply was sent is missed every
    time rather than once in a while (a clean-clone CI once read 1 of 2 requests)."""
    count = server.m_http.inc

    def slow_count(*args, **labels):
        time.sleep(0.3)
        count(*args, **labels)

    monkeypatch.setattr(server.m_http, "inc", slow_count)
    for done in (1, 2):
        assert call(server, "POST", "/v1/run", run_body(f"m{done}"))[0] == 200
        assert server.m_http.value(route="/v1/run", code="200") == done
    assert call(server, "GET", "/nowhere")[0] == 404  # an error reply is counted alike
    assert server.m_http.value(route="other", code="404") == 1
    # several requests on one kept-alive connection: each is counted once, before its reply
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
    for done in (1, 2, 3):
        conn.request("GET", "/health")
        response = conn.getresponse()
        response.read()
        assert response.status == 200 and not response.will_close
        assert server.m_http.value(route="/health", code="200") == done
    conn.close()


def test_health_reports_pool_shape_and_metrics_show_results(server, pool):
    status, _, health = call(server, "GET", "/health")
    assert status == 200
    assert health["status"] == "ok" and health["slots"] == 2 and health["backend"] == "fake"
    assert health["degraded"] == ["cpuset"] and health["auth"] is False

    call(server, "POST", "/v1/run", run_body("m1"))
    call(server, "POST", "/v1/run", run_body("m2", program="by_input",
                                             tests=[{"input": "infra_error"},
                                                    {"input": "timeout"}]))
    status, headers, text = call(server, "GET", "/metrics")
    assert status == 200 and headers["Content-Type"].startswith("text/plain; version=0.0.4")
    samples = parse_exposition(text.decode())
    assert samples[("sandbox_test_results_total", (("status", "success"),))] == 1
    assert samples[("sandbox_test_results_total", (("status", "wrong_answer"),))] == 1
    assert samples[("sandbox_test_results_total", (("status", "infra_error"),))] == 1
    assert samples[("sandbox_infra_errors_total", ())] == 1
    assert samples[("sandbox_test_duration_seconds_count", (("status", "timeout"),))] == 1
    assert samples[("sandbox_test_duration_seconds_bucket",
                    (("status", "timeout"), ("le", "5")))] == 0  # the 10 s cap
    assert samples[("sandbox_slots", ())] == 2
    assert samples[("sandbox_queue_depth", ())] == 0
    assert samples[("sandbox_degraded", (("feature", "cpuset"),))] == 1
    assert samples[("sandbox_http_requests_total", (("route", "/v1/run"), ("code", "200")))] == 2


def test_queue_full_is_429_with_retry_after():
    with start(FakePool(slots=1, queue_limit=1), retry_after_s=3) as srv:
        blocked = []
        for i in range(2):  # one running (blocked on the gate), one queued
            t = threading.Thread(target=lambda i=i: blocked.append(
                call(srv, "POST", "/v1/run", run_body(f"w{i}", program="wait",
                                                       tests=[{"input": "x"}]))))
            t.start()
            time.sleep(0.3)
        status, headers, body = call(srv, "POST", "/v1/run", run_body("over"))
        assert status == 429 and headers["Retry-After"] == "3"
        assert body["error"] == "queue_full"
        samples = parse_exposition(call(srv, "GET", "/metrics")[2].decode())
        assert samples[("sandbox_queue_depth", ())] == 1
        assert samples[("sandbox_slots_busy", ())] == 1
        assert samples[("sandbox_rejected_total", (("reason", "queue_full"),))] == 1
        srv.pool.gate.set()
        deadline = time.monotonic() + 10
        while len(blocked) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [s for s, _, _ in blocked] == [200, 200]
        # The refused id was not remembered: sending it again now runs it.
        assert call(srv, "POST", "/v1/run", run_body("over"))[0] == 200
        srv.pool.close()


def test_blobs_upload_once_then_referenced_by_hash(server, pool):
    big_in = "7 " * 5000
    digest = sha256_hex(big_in.encode())
    ref = {"sha256": digest, "type": "text"}
    body = run_body("b1", tests=[{"input": ref, "expected": ref}])
    status, _, reply = call(server, "POST", "/v1/run", body)
    assert status == 409 and reply["error"] == "missing_blobs" and reply["missing"] == [digest]
    assert call(server, "HEAD", f"/v1/blobs/{digest}")[0] == 404

    status, _, reply = call(server, "PUT", f"/v1/blobs/{digest}", big_in.encode())
    assert status == 201 and reply == {"sha256": digest, "created": True}
    assert call(server, "PUT", f"/v1/blobs/{digest}", big_in.encode())[0] == 200  # known
    assert call(server, "HEAD", f"/v1/blobs/{digest}")[0] == 200

    status, _, reply = call(server, "POST", "/v1/run", body)
    assert status == 200 and reply["results"][0]["status"] == "success"
    assert pool.executions[-1] == ("echo", big_in)
    status, _, reply = call(server, "POST", "/v1/run", {**body, "request_id": "b2"})
    assert status == 200
    assert server.store.stats().uploads == 1  # the data crossed the network once


def test_blob_uploads_are_verified_and_bounded(pool):
    with start(pool, blob_budget_bytes=1000, max_blob_bytes=100) as srv:
        data = b"x" * 50
        wrong = sha256_hex(b"other")
        status, _, reply = call(srv, "PUT", f"/v1/blobs/{wrong}", data)
        assert status == 400 and "hashes to sha256" in reply["message"]
        assert call(srv, "HEAD", f"/v1/blobs/{wrong}")[0] == 404
        big = b"y" * 101
        status, _, reply = call(srv, "PUT", f"/v1/blobs/{sha256_hex(big)}", big)
        assert status == 413 and reply["error"] == "body_too_large"
        status, _, reply = call(srv, "PUT", "/v1/blobs/NOTHEX", data)
        assert status == 400 and "sha256" in reply["message"]


def test_disk_budget_evicts_least_recent_blob_and_run_asks_again(pool):
    with start(pool, blob_budget_bytes=250, max_blob_bytes=100) as srv:
        blobs = [bytes([65 + i]) * 100 for i in range(3)]
        digests = [sha256_hex(b) for b in blobs]
        for digest, data in zip(digests, blobs):
            assert call(srv, "PUT", f"/v1/blobs/{digest}", data)[0] == 201
        assert call(srv, "HEAD", f"/v1/blobs/{digests[0]}")[0] == 404  # evicted
        assert call(srv, "HEAD", f"/v1/blobs/{digests[2]}")[0] == 200
        ref = {"sha256": digests[0], "type": "bytes"}
        status, _, reply = call(srv, "POST", "/v1/run", run_body("e", tests=[{"input": ref}]))
        assert status == 409 and reply["missing"] == [digests[0]]
        samples = parse_exposition(call(srv, "GET", "/metrics")[2].decode())
        assert samples[("sandbox_blob_evictions_total", ())] == 1
        assert samples[("sandbox_blob_bytes", ())] == 200


def test_non_loopback_bind_requires_a_token():
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0")
    with pytest.raises(ValueError, match="requires a bearer token"):
        ServerConfig(host="0.0.0.0", port=0)
    with pytest.raises(ValueError, match="at least 16 characters"):
        ServerConfig(host="0.0.0.0", port=0, token="short")
    ServerConfig(host="0.0.0.0", port=0, token=TOKEN)  # accepted


def test_token_is_checked_on_every_route_but_health(pool):
    with start(pool, token=TOKEN) as srv:
        good = {"Authorization": f"Bearer {TOKEN}"}
        bad = {"Authorization": "Bearer wrong-token-0123456789"}
        assert call(srv, "GET", "/health")[0] == 200
        for headers in ({}, bad):
            status, reply_headers, reply = call(srv, "POST", "/v1/run", run_body(), headers)
            assert status == 401 and reply["error"] == "unauthorized"
            assert reply_headers["WWW-Authenticate"].startswith("Bearer")
            assert call(srv, "GET", "/metrics", headers=headers)[0] == 401
            digest = sha256_hex(b"z")
            assert call(srv, "PUT", f"/v1/blobs/{digest}", b"z", headers)[0] == 401
            assert call(srv, "HEAD", f"/v1/blobs/{digest}", headers=headers)[0] == 401
        assert pool.calls == 0
        assert call(srv, "POST", "/v1/run", run_body(), good)[0] == 200
        assert call(srv, "GET", "/metrics", headers=good)[0] == 200


@pytest.mark.parametrize("body, status, message", [
    (b"{not json", 400, "not valid JSON"),
    (b"[1, 2]", 400, "body: expected a JSON object, got list"),
    ({"program": "echo", "tests": [{"input": "1"}]}, 400, "request_id: missing"),
    (run_body(tests=[]), 400, "tests: is empty"),
    (run_body(tests=[{"input": "1"}, {"input": 5}]), 400, "tests[1].input: expected a string"),
    (run_body(tests=[{"expected": "1"}]), 400, "tests[0].input: missing"),
    (run_body(tests=[{"input": {"b64": "%%%"}}]), 400, "tests[0].input.b64: not valid base64"),
    (run_body(tests=[{"input": {"sha256": "abc", "type": "text"}}]), 400, "tests[0].input.sha256"),
    (run_body(program=""), 400, "program: is empty"),
    (run_body(program=3), 400, "program: expected a string, got int"),
    (run_body(request_id="bad id!"), 400, "request_id: must match"),
    (run_body(limits={"time_s": "10"}), 400, "limits.time_s: expected float, got str"),
    (run_body(limits={"time_s": 0}), 400, "limits: Limits.time_s must be in"),
    (run_body(limits={"memory": 5}), 400, "limits.memory: unknown field"),
    (run_body(interface="grpc"), 400, "interface: must be one of"),
    (run_body(float_tolerance=-1), 400, "float_tolerance"),
    (run_body(extra_field=1), 400, "extra_field: unknown field"),
    (run_body(tests=[{"input": "1"}] * 5), 413, "exceed this node's limit of 4"),
])
def test_malformed_run_requests_get_precise_errors(pool, body, status, message):
    with start(pool, max_tests_per_request=4) as srv:
        got, _, reply = call(srv, "POST", "/v1/run", body)
        assert got == status, reply
        assert message in reply["message"]
        assert pool.calls == 0
        assert call(srv, "POST", "/v1/run", run_body("after"))[0] == 200


def raw_exchange(srv, payload: bytes, timeout=10) -> bytes:
    with socket.create_connection(("127.0.0.1", srv.port), timeout=timeout) as sock:
        sock.sendall(payload)
        chunks = []
        while True:
            try:
                chunk = sock.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def test_protocol_level_garbage_never_takes_the_server_down(pool):
    with start(pool, max_body_bytes=1000, socket_timeout_s=0.5) as srv:
        assert b'"error": "http_400"' in raw_exchange(srv, b"\x00\xff garbage\r\n\r\n")
        assert b'"error": "http_505"' in raw_exchange(srv, b"GET / HTTP/9.9\r\n\r\n")
        reply = raw_exchange(srv, b"POST /v1/run HTTP/1.1\r\nHost: x\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 411")
        reply = raw_exchange(srv, b"POST /v1/run HTTP/1.1\r\nContent-Length: 5000\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 413")
        reply = raw_exchange(srv, b"POST /v1/run HTTP/1.1\r\nContent-Length: -3\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 400")
        # A client announcing 100 bytes and sending 10 is cut off after the socket timeout.
        started = time.monotonic()
        reply = raw_exchange(srv, b"POST /v1/run HTTP/1.1\r\nContent-Length: 100\r\n\r\n{", 5)
        assert reply == b"" and time.monotonic() - started < 4
        assert call(srv, "GET", "/nowhere")[0] == 404
        assert call(srv, "GET", "/v1/run")[0] == 405
        assert call(srv, "DELETE", "/v1/run")[0] == 501
        assert call(srv, "POST", "/v1/run", run_body())[0] == 200


def test_same_request_id_runs_once_and_reuse_with_other_content_is_refused(server, pool):
    body = run_body("idem", program="sleep 0.3")
    replies = []
    threads = [threading.Thread(target=lambda: replies.append(call(server, "POST", "/v1/run",
                                                                   body))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert call(server, "POST", "/v1/run", body)[0] == 200  # after completion: from the ledger
    assert [r[0] for r in replies] == [200, 200, 200]
    assert len({json.dumps(r[2]) for r in replies}) == 1
    assert len(pool.executions) == 2  # two tests, executed once
    status, _, reply = call(server, "POST", "/v1/run", {**body, "program": "echo"})
    assert status == 422 and reply["error"] == "request_id_reused"
    samples = parse_exposition(call(server, "GET", "/metrics")[2].decode())
    assert samples[("sandbox_duplicate_requests_total", ())] == 3


def test_pool_failure_is_infra_error_and_forgotten(server, pool):
    body = run_body("boom", program="raise")
    status, _, reply = call(server, "POST", "/v1/run", body)
    assert status == 200
    assert [r["status"] for r in reply["results"]] == ["infra_error", "infra_error"]
    assert "fake pool failure" in reply["results"][0]["detail"]
    call(server, "POST", "/v1/run", body)
    assert pool.calls == 2  # not served from the ledger: a retry runs again


def test_draining_node_refuses_new_runs_and_fails_health(server):
    assert server.drain(timeout_s=1.0) is True
    status, headers, reply = call(server, "GET", "/health")
    assert status == 503 and reply["status"] == "draining"
    status, headers, reply = call(server, "POST", "/v1/run", run_body())
    assert status == 503 and reply["error"] == "draining" and "Retry-After" in headers


def _run_bytes(**raw_fields: bytes) -> bytes:
    """A run body with some fields spliced in as raw JSON text (json.dumps cannot write a
    5,000-digit integer or NaN-free garbage)."""
    head = json.dumps(run_body(tests=[{"input": "1 2", "expected": "1 2"}]))[:-1]
    return (head + "".join(f', "{k}": {v.decode()}' for k, v in raw_fields.items())
            + "}").encode()


@pytest.mark.parametrize("body, message", [
    (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    (b'{"a": ' * 100_000 + b"1" + b"}" * 100_000, "nested too deeply"),
    (_run_bytes(limits=b'{"repeats": ' + b"9" * 5000 + b"}"), "not valid JSON"),
    (_run_bytes(float_tolerance=b"1" * 5000), "not valid JSON"),
    (_run_bytes(float_tolerance=b"NaN"), "NaN is not a JSON number"),
    (_run_bytes(float_tolerance=b"-Infinity"), "Infinity is not a JSON number"),
    (json.dumps(run_body(tests=[{"input": "ok \ud800"}])).encode(), "tests[0].input: text holds a lone surrogate"),
    (json.dumps(run_body(tests=[{"input": "1", "expected": "\udfff"}])).encode(),
     "tests[0].expected: text holds a lone surrogate"),
    (json.dumps(run_body(checker="def check(i, o, e):\n    return '\udc80'")).encode(),
     "checker: text holds a lone surrogate"),
])
def test_unreadable_bodies_are_400_naming_the_problem(pool, body, message):
    with start(pool) as srv:
        got, _, reply = call(srv, "POST", "/v1/run", body)
        assert got == 400, reply
        assert reply["error"] == "bad_json" or "surrogate" in message
        assert message in reply["message"], reply
        assert pool.calls == 0
        assert call(srv, "POST", "/v1/run", run_body("after"))[0] == 200


@pytest.mark.parametrize("request_line, status", [
    (b"\x00\xff garbage", b"400"), (b"GARBAGE", b"400"), (b"GET / HTTP/2.0", b"505"),
    (b"GET / HTTP/1.1.1", b"400"), (b"GET / FTP/1.0", b"400"),
])
def test_parser_errors_answer_with_a_status_line(pool, request_line, status):
    with start(pool, socket_timeout_s=0.5) as srv:
        reply = raw_exchange(srv, request_line + b"\r\n\r\n")
        assert reply.startswith(b"HTTP/1.1 " + status + b" "), reply[:200]
        head, _, body = reply.partition(b"\r\n\r\n")
        assert b"Content-Type: application/json" in head
        assert json.loads(body)["error"] == f"http_{status.decode()}"


def test_connection_cap_refuses_with_503_and_frees_on_close(pool):
    with start(pool, max_connections=2, max_connections_per_client=2, socket_timeout_s=20,
               header_timeout_s=20) as srv:
        idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5) for _ in range(2)]
        try:
            time.sleep(0.2)  # both accepted and each holding a thread
            reply = raw_exchange(srv, b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n", timeout=5)
            assert reply.startswith(b"HTTP/1.1 503 "), reply[:200]
            assert b"Retry-After: " in reply and b"too_many_connections" in reply
        finally:
            for sock in idle:
                sock.close()
        for _ in range(100):  # the two threads see EOF and give their places back
            if call(srv, "GET", "/health")[0] == 200:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("connection places were not given back")


def health_status(srv, source: str = "127.0.0.1", timeout: float = 10) -> int:
    """GET /health on a fresh connection from `source` (any 127/8 address is this host)."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=timeout,
                                      source_address=(source, 0))
    try:
        conn.request("GET", "/health")
        return conn.getresponse().status
    finally:
        conn.close()


def half_sent(srv, source: str = "127.0.0.1") -> socket.socket:
    """A connection that sends a request line and one header, then nothing."""
    sock = socket.create_connection(("127.0.0.1", srv.port), timeout=15,
                                    source_address=(source, 0))
    sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n")
    return sock


def closed_by_server(sock: socket.socket) -> bool:
    """Whether the server ends this connection before the client's 15 s timeout (EOF or a
    reset; anything it sent first, such as a refusal, is read and skipped)."""
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def test_one_client_gets_its_share_of_connections_and_health_still_answers(pool):
    """Slowloris: half-sent requests from one address filled --max-connections and
    /health answered 503 to everyone. Now one address holds at most its share; the next
    connection from it gets 429 at once, and another address still gets /health."""
    with start(pool, max_connections=4, max_connections_per_client=2, header_timeout_s=60,
               socket_timeout_s=60) as srv:
        held = [half_sent(srv) for _ in range(2)]
        try:
            over = raw_exchange(srv, b"", timeout=15)  # sends nothing: the refusal comes first
            assert over.startswith(b"HTTP/1.1 429 "), over[:200]
            assert b"Retry-After: " in over and b"too_many_connections_from_client" in over
            assert health_status(srv, source="127.0.0.2") == 200
            assert health_status(srv, source="127.0.0.3") == 200
        finally:
            for sock in held:
                sock.close()
        for _ in range(200):  # the two threads see EOF and give the places back
            if health_status(srv) == 200:
                break
            time.sleep(0.05)
        else:
            raise AssertionError("the client's connection places were not given back")


def test_an_authenticated_client_is_served_while_another_address_holds_its_share(pool):
    """One address tries to hold every place with half-sent requests: it keeps its share, the
    rest is refused, and a client with the token from another address still runs programs
    (one without it is still refused)."""
    with start(pool, token=TOKEN, max_connections=4, max_connections_per_client=2,
               header_timeout_s=60, socket_timeout_s=60) as srv:
        held = [half_sent(srv) for _ in range(4)]
        try:
            assert [closed_by_server(sock) for sock in held[2:]] == [True, True]
            for headers, expected in (({"Authorization": f"Bearer {TOKEN}"}, 200), ({}, 401)):
                conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30,
                                                  source_address=("127.0.0.2", 0))
                try:
                    conn.request("POST", "/v1/run", body=json.dumps(run_body()).encode(),
                                 headers=headers)
                    response = conn.getresponse()
                    reply = json.loads(response.read())
                finally:
                    conn.close()
                assert response.status == expected, reply
            assert pool.calls == 1  # the authenticated run reached the pool, the other did not
        finally:
            for sock in held:
                sock.close()


def test_headers_must_arrive_within_the_deadline_however_they_trickle(pool):
    """Half-sent requests, and one trickled a byte at a time (each recv well inside the socket
    timeout), are closed once the header deadline passes; the server then answers /health to
    the same address. Here one client may take every place, so only the deadline frees them."""
    with start(pool, max_connections=3, max_connections_per_client=3, header_timeout_s=1,
               socket_timeout_s=60) as srv:
        held = [half_sent(srv) for _ in range(2)]
        trickler = half_sent(srv)
        trickled = []

        def trickle() -> None:
            for _ in range(60):  # 12 s at most: far beyond the 1 s deadline
                try:
                    trickler.sendall(b"a")
                except OSError:
                    return
                trickled.append(1)
                time.sleep(0.2)

        thread = threading.Thread(target=trickle)
        thread.start()
        try:
            assert [closed_by_server(sock) for sock in held] == [True, True]
            thread.join()
            assert len(trickled) < 60, "the trickled request was never closed"
            for _ in range(200):
                if health_status(srv) == 200:
                    break
                time.sleep(0.05)
            else:
                raise AssertionError("/health did not answer after the deadline")
        finally:
            thread.join()
            for sock in [*held, trickler]:
                sock.close()


def test_the_deadline_covers_headers_not_bodies_and_restarts_per_request(pool):
    """A body that arrives after the header deadline (within the socket timeout) is read and
    served, and the next request on the same keep-alive connection gets a deadline of its
    own."""
    with start(pool, header_timeout_s=1, socket_timeout_s=60) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=30)
        try:
            sockets = []
            for request_id in ("slow-body", "next"):
                body = json.dumps(run_body(request_id)).encode()
                conn.putrequest("POST", "/v1/run")
                conn.putheader("Content-Type", "application/json")
                conn.putheader("Content-Length", str(len(body)))
                conn.endheaders()  # the headers go out now
                if request_id == "slow-body":
                    time.sleep(1.5)  # past the 1 s header deadline
                conn.send(body)
                response = conn.getresponse()
                reply = json.loads(response.read())
                assert response.status == 200, reply
                assert len(reply["results"]) == 2 and not response.will_close
                sockets.append(conn.sock)
            assert sockets[0] is sockets[1]  # one keep-alive connection served both
        finally:
            conn.close()


def test_server_config_validates_the_new_limits():
    with pytest.raises(ValueError, match="max_connections"):
        ServerConfig(max_connections=0)
    with pytest.raises(ValueError, match="header_timeout_s"):
        ServerConfig(header_timeout_s=0)
    with pytest.raises(ValueError, match="max_connections_per_client"):
        ServerConfig(max_connections_per_client=0)
    assert ServerConfig().socket_timeout_s <= 60  # slow clients cannot hold a thread for long
    # One client address never gets every place (a quarter is kept for the others).
    assert ServerConfig(max_connections=256).client_connection_limit == 192
    assert ServerConfig(max_connections=2).client_connection_limit == 1
    assert ServerConfig(max_connections=8, max_connections_per_client=99
                        ).client_connection_limit == 8
