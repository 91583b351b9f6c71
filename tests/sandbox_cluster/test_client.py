"""connect(): embedded pool, fleet balancing, immediate retries, failover, backpressure, blobs,
sync/async/many in flight. Fleet nodes are in-process servers over `FakePool`; the process-kill
failover with the real pool is in test_load.py."""

import asyncio
import contextlib
import socket
import threading
import time

import pytest

from sandbox_cluster import (
    Limits,
    SandboxRequestError,
    SandboxUnavailable,
    Status,
    TestCase,
    connect,
)
from sandbox_cluster.server import SandboxServer, ServerConfig
from sandbox_cluster.testing import FakePool, MisbehavingNode

FAST = {"health_interval_s": 0.1, "connect_timeout_s": 2.0}


@contextlib.contextmanager
def fleet(*pools, **config):
    servers = [SandboxServer(p, ServerConfig(port=0, **config)).start() for p in pools]
    try:
        yield servers
    finally:
        for server in servers:
            server.close()
        for pool in pools:
            pool.close()


def echo_tests(tag: str, n: int = 3) -> list[TestCase]:
    return [TestCase(f"{tag} {i}", f"{tag} {i}") for i in range(n)]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_embedded_client_runs_on_the_given_pool_with_provenance():
    pool = FakePool()
    with connect(pool=pool) as sb:
        results = sb.run("echo", [*echo_tests("a"), TestCase("x", "y")])
    assert [r.status for r in results] == [Status.SUCCESS] * 3 + [Status.WRONG_ANSWER]
    assert all(r.extra == {"node": "embedded", "attempts": 1, "timing": "fleet"}
               for r in results)
    assert sb.stats()["requests"] == 1 and sb.stats()["requests_remote_only"] == 0
    pool.close()


def test_default_connect_runs_on_a_real_local_pool():
    with connect(slots=1) as sb:
        results = sb.run("print(int(input()) * 2)", [TestCase("21", "42"), TestCase("1", "3")],
                         Limits(time_s=2))
    assert [r.status for r in results] == [Status.SUCCESS, Status.WRONG_ANSWER], results
    assert results[0].stdout.strip() == b"42" and 0 < results[0].duration_s < 2, results
    assert results[0].extra["node"] == "embedded" and results[0].extra["timing"] == "fleet"


def test_embedded_pool_failure_is_inconclusive_not_a_verdict():
    pool = FakePool()
    with connect(pool=pool, retry_budget=1) as sb:
        results = sb.run("raise", echo_tests("a", 2))
    assert [r.status for r in results] == [Status.INFRA_ERROR] * 2
    assert results[0].extra["attempts"] == 2 and results[0].extra["timing"] == "none"
    pool.close()


def test_requests_are_balanced_across_healthy_nodes():
    pools = FakePool(slots=4), FakePool(slots=4)
    with fleet(*pools) as servers, connect([s.url for s in servers], **FAST) as sb:
        futures = [sb.submit("sleep 0.02", echo_tests(f"b{i}", 1)) for i in range(40)]
        nodes = [f.result()[0].extra["node"] for f in futures]
    assert {nodes.count(s.url) for s in servers} <= set(range(12, 29))  # both carry load
    assert pools[0].calls + pools[1].calls == 40


def test_draining_node_gets_no_new_requests():
    pools = FakePool(), FakePool()
    with fleet(*pools) as servers, connect([s.url for s in servers], **FAST) as sb:
        servers[0].drain(timeout_s=1)
        time.sleep(0.4)  # a health round sees the 503
        results = [sb.run("echo", echo_tests(f"d{i}", 1))[0] for i in range(6)]
    assert {r.extra["node"] for r in results} == {servers[1].url}
    assert pools[0].calls == 0


def test_inconclusive_results_are_retried_immediately_within_budget():
    tests = [TestCase("success*1"), TestCase("success*2"), TestCase("wrong_answer")]
    with fleet(FakePool()) as servers:
        with connect([servers[0].url], retry_budget=2, **FAST) as sb:
            results = sb.run("by_input", tests)
            assert [r.status for r in results] == [Status.SUCCESS, Status.SUCCESS,
                                                   Status.WRONG_ANSWER]
            assert [r.extra["attempts"] for r in results] == [2, 3, 1]
            assert sb.stats()["tests_retried"] == 3  # 2 in round 1, 1 in round 2
            assert sb.stats()["inconclusive_infra_error"] == 3
        with connect([servers[0].url], retry_budget=1, **FAST) as sb:
            results = sb.run("by_input", [TestCase("timeout*2")])
            assert results[0].status is Status.INFRA_ERROR
            assert results[0].extra["attempts"] == 2
            assert sb.stats()["requests_inconclusive"] == 1


def test_no_retry_round_starts_after_the_retry_deadline():
    with fleet(FakePool()) as servers, connect([servers[0].url], retry_budget=5,
                                               retry_deadline_s=0.0, **FAST) as sb:
        result = sb.run("by_input", [TestCase("success*1")])[0]
    assert result.status is Status.INFRA_ERROR and result.extra["attempts"] == 1


def test_retries_go_to_another_node():
    broken, good = FakePool(broken=True), FakePool()
    with fleet(broken, good) as servers, connect([s.url for s in servers], **FAST) as sb:
        results = [r for i in range(10) for r in sb.run("echo", echo_tests(f"r{i}", 2))]
    assert all(r.status is Status.SUCCESS for r in results)
    assert {r.extra["node"] for r in results} == {servers[1].url}
    assert broken.calls > 0  # some batches did land on the broken node first...
    assert {r.extra["attempts"] for r in results} == {1, 2}  # ...and were retried once


def test_unparseable_reply_is_unknown_and_never_a_program_failure():
    garbage = MisbehavingNode("garbage")
    try:
        with connect([garbage.url], retry_budget=1, **FAST) as sb:
            results = sb.run("echo", echo_tests("u", 2))
            stats = sb.stats()
        assert [r.status for r in results] == [Status.INFRA_ERROR] * 2
        assert "unknown (unparseable) reply" in results[0].detail
        assert results[0].extra["inconclusive"] == "unknown"
        # Counted apart from hard infra errors: 2 tests x 2 attempts, none "infra_error".
        assert stats["inconclusive_unknown"] == 4 and stats["inconclusive_infra_error"] == 0
        assert len(garbage.seen) == 2  # the unknown result triggered an immediate retry
        with fleet(FakePool()) as servers, connect([garbage.url, servers[0].url],
                                                   **FAST) as sb:
            results = [r for i in range(6) for r in sb.run("echo", echo_tests(f"u{i}"))]
        assert all(r.status is Status.SUCCESS for r in results)
    finally:
        garbage.close()


def test_failover_when_a_node_dies_mid_request_loses_and_duplicates_nothing():
    dying = MisbehavingNode("die")
    good = FakePool()
    try:
        with fleet(good) as servers, connect([dying.url, servers[0].url], **FAST) as sb:
            futures = [sb.submit("echo", echo_tests(f"f{i}")) for i in range(20)]
            results = [f.result() for f in futures]
            assert sb.stats()["failovers"] == len(dying.seen) > 0
        for i, batch in enumerate(results):
            assert [r.stdout.decode() for r in batch] == [f"f{i} {k}" for k in range(3)]
            assert all(r.extra["node"] == servers[0].url and r.extra["attempts"] == 1
                       for r in batch)
        inputs = [text for _, text in good.executions]
        assert len(inputs) == len(set(inputs)) == 60  # every test executed exactly once
    finally:
        dying.close()


def test_a_slow_reply_rejoins_the_running_execution_instead_of_failing_over():
    pools = FakePool(), FakePool()
    with fleet(*pools) as servers, connect([s.url for s in servers], request_timeout_s=0.3,
                                           **FAST) as sb:
        result = sb.run("sleep 1.0", [TestCase("slow", "slow")])[0]
        assert sb.stats()["slow_replies"] >= 1  # the client stopped waiting and re-sent...
        assert sb.stats()["failovers"] == 0  # ...to the same, healthy node
    assert result.status is Status.SUCCESS
    executions = pools[0].executions + pools[1].executions
    assert executions == [("sleep 1.0", "slow")]  # which ran it once


def test_no_healthy_node_ends_inconclusive_after_the_failover_deadline():
    url = f"http://127.0.0.1:{free_port()}"
    with connect([url], failover_deadline_s=0.5, retry_budget=0, startup_deadline_s=None,
                 **FAST) as sb:
        started = time.monotonic()
        results = sb.run("echo", echo_tests("n", 2))
        assert time.monotonic() - started < 5
        assert sb.health()[0]["healthy"] is False
    assert [r.status for r in results] == [Status.INFRA_ERROR] * 2
    assert "no healthy sandbox node" in results[0].detail
    assert results[0].extra["inconclusive"] == "unavailable"


def test_a_fleet_with_no_node_up_at_connect_is_refused_naming_each_node():
    """Connecting to a fleet that is down used to hang every job for failover_deadline_s, and a
    command that submits in rounds for many times that, without a word."""
    urls = [f"http://127.0.0.1:{free_port()}", f"http://127.0.0.1:{free_port()}"]
    started = time.monotonic()
    with pytest.raises(SandboxUnavailable, match=r"^no sandbox node answered /health within "
                       r"0.5 s of connecting \(http://127.0.0.1:\d+: .*Connection"):
        connect(urls, startup_deadline_s=0.5, **FAST)
    assert 0.5 <= time.monotonic() - started < 10


def test_a_node_that_starts_within_the_startup_deadline_is_waited_for():
    port, pool = free_port(), FakePool()
    server = SandboxServer(pool, ServerConfig(port=port))
    timer = threading.Timer(0.5, server.start)
    timer.start()
    try:
        with connect([f"http://127.0.0.1:{port}"], startup_deadline_s=20, **FAST) as sb:
            assert sb.run("echo", echo_tests("up", 1))[0].status is Status.SUCCESS
    finally:
        timer.join()
        server.close()
        pool.close()


def test_a_node_that_comes_back_is_used_again():
    port = free_port()
    pool = FakePool()
    with connect([f"http://127.0.0.1:{port}"], failover_deadline_s=10, startup_deadline_s=None,
                 **FAST) as sb:
        future = sb.submit("echo", echo_tests("late", 1))
        time.sleep(0.5)
        assert not future.done()
        with SandboxServer(pool, ServerConfig(port=port)):
            assert future.result(timeout=10)[0].status is Status.SUCCESS
    pool.close()


def test_requests_the_fleet_refuses_raise_with_the_nodes_message():
    with fleet(FakePool(), max_tests_per_request=2, token="t" * 20) as servers:
        url = servers[0].url
        with connect([url], token="t" * 20, **FAST) as sb, \
                pytest.raises(SandboxRequestError, match=r"HTTP 413.*limit of 2"):
            sb.run("echo", echo_tests("big", 3))
        with connect([url], token="w" * 20, **FAST) as sb, \
                pytest.raises(SandboxRequestError, match="HTTP 401"):
            sb.run("echo", echo_tests("auth", 1))


def test_token_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("SANDBOX_CLUSTER_TOKEN", "e" * 20)
    with fleet(FakePool(), token="e" * 20) as servers, connect([servers[0].url], **FAST) as sb:
        assert sb.run("echo", echo_tests("env", 1))[0].status is Status.SUCCESS


def test_backpressure_moves_to_a_free_node_and_waits_when_all_are_full():
    full, free = FakePool(slots=1, queue_limit=0), FakePool()
    full.submit("wait", echo_tests("occupy", 1))  # its only slot is taken, no queue
    with fleet(full, free) as servers, connect([s.url for s in servers], **FAST) as sb:
        results = [sb.run("echo", echo_tests(f"p{i}", 1))[0] for i in range(6)]
        assert {r.extra["node"] for r in results} == {servers[1].url}
        assert sb.stats()["backpressure_waits"] >= 1
    busy = FakePool(slots=1, queue_limit=0)
    with fleet(busy, retry_after_s=0) as servers, connect([servers[0].url], **FAST) as sb:
        blocker = sb.submit("wait", echo_tests("block", 1))
        time.sleep(0.3)
        waiting = sb.submit("echo", echo_tests("queued", 1))
        time.sleep(0.5)
        assert not waiting.done() and sb.stats()["backpressure_waits"] > 1
        busy.gate.set()
        assert waiting.result(timeout=10)[0].status is Status.SUCCESS
        assert blocker.result(timeout=10)[0].status is Status.SUCCESS


def test_large_inputs_cross_the_network_once():
    big = [TestCase(f"{i} " + "9 " * 20000, f"{i} " + "9 " * 20000) for i in range(4)]
    with fleet(FakePool()) as servers, connect([servers[0].url], inline_limit_bytes=1024,
                                               **FAST) as sb:
        for _ in range(3):
            assert all(r.status is Status.SUCCESS for r in sb.run("echo", big))
        store = servers[0].store.stats()
    assert store.uploads == 4  # inputs and expected outputs are equal: 4 distinct blobs
    assert store.hits == 3 * 8


def test_sync_async_and_many_in_flight():
    pools = FakePool(slots=4), FakePool(slots=4)
    with fleet(*pools) as servers, connect([s.url for s in servers], max_in_flight=32,
                                           **FAST) as sb:
        futures = [sb.submit("echo", echo_tests(f"s{i}")) for i in range(100)]

        async def many():
            return await asyncio.gather(*(sb.run_async("echo", echo_tests(f"a{i}"))
                                          for i in range(100)))

        async_results = asyncio.run(many())
        sync_results = [f.result() for f in futures]
    for tag, batches in (("s", sync_results), ("a", async_results)):
        for i, batch in enumerate(batches):
            assert [r.stdout.decode() for r in batch] == [f"{tag}{i} {k}" for k in range(3)]
    executed = [text for pool in pools for _, text in pool.executions]
    assert len(executed) == len(set(executed)) == 600


def test_arguments_are_validated_before_anything_runs():
    pool = FakePool()
    with connect(pool=pool) as sb:
        with pytest.raises(TypeError, match=r"tests\[1\]: expected TestCase"):
            sb.run("echo", [TestCase("1"), "2"])
        with pytest.raises(ValueError, match="test_kinds: 1 kinds for 2 tests"):
            sb.run("echo", echo_tests("k", 2), test_kinds=["TO"])
        with pytest.raises(ValueError, match=r"test_kinds\[0\]: unknown kind 'T1'"):
            sb.run("echo", echo_tests("k", 1), test_kinds=["T1"])
        with pytest.raises(ValueError, match="interface"):
            sb.run("echo", echo_tests("k", 1), interface="grpc")
        assert sb.run("echo", []) == []
    assert pool.calls == 0
    with pytest.raises(TypeError, match="unknown option 'retries'"):
        connect(pool=pool, retries=3)
    with pytest.raises(ValueError, match="fallback='local' needs a fleet"):
        connect(pool=pool, fallback="local")
    with pytest.raises(ValueError, match="retry_budget must be >= 0"):
        connect(pool=pool, retry_budget=-1)
    with pytest.raises(ValueError, match="not an http"):
        connect(["ftp://host:1"])
    with pytest.raises(ValueError, match="pool options apply to the embedded pool"):
        connect(["http://127.0.0.1:1"], slots=2)
    pool.close()


def test_closed_client_refuses_new_work_and_finished_everything_first():
    pool = FakePool()
    sb = connect(pool=pool)
    futures = [sb.submit("sleep 0.05", echo_tests(f"c{i}", 1)) for i in range(5)]
    sb.close()
    assert all(f.done() and f.result()[0].status is Status.SUCCESS for f in futures)
    with pytest.raises(RuntimeError, match="closed"):
        sb.submit("echo", echo_tests("late", 1))
    pool.close()


def test_limits_and_options_reach_the_node():
    seen = {}

    class Recording(FakePool):
        def submit(self, program, tests, limits, **kw):
            seen.update(limits=limits, **kw)
            kw.pop("stop_after_failure")  # recorded; this fake runs every test
            return super().submit(program, tests, limits, **kw)

    pool = Recording()
    with fleet(pool) as servers, connect([servers[0].url], **FAST) as sb:
        # (function inputs are JSON objects: the one request validator checks them)
        sb.run("echo", [TestCase('{"x": 1}')], Limits(time_s=2, memory_mb=256, repeats=3),
               interface="function", checker="def check(i, o, e): return True",
               float_tolerance=1e-6, repeat_aggregate="median")
    assert seen == {"limits": Limits(time_s=2, memory_mb=256, repeats=3),
                    "interface": "function", "checker": "def check(i, o, e): return True",
                    "float_tolerance": 1e-6, "repeat_aggregate": "median",
                    # test kinds stay with the client unless the node needs them
                    "test_kinds": None, "stop_after_failure": False}
    with fleet(pool) as servers, connect([servers[0].url], **FAST) as sb:
        sb.run("echo", echo_tests("t", 2), test_kinds=["T0", "TO"], stop_after_failure=True)
    assert seen["test_kinds"] == ("T0", "TO") and seen["stop_after_failure"] is True


def test_threads_do_not_leak_after_close():
    before = threading.active_count()
    with fleet(FakePool()) as servers:
        for _ in range(3):
            with connect([servers[0].url], **FAST) as sb:
                sb.run("echo", echo_tests("t", 1))
    time.sleep(0.3)
    assert threading.active_count() <= before + 1
