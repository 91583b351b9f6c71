"""LocalPool: the interface H4's server and client build on (run/submit/stats/close, QueueFull),
validation errors, repeats, concurrency, and who is blamed when a jail breaks."""

from __future__ import annotations

import concurrent.futures
import os
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import JailProcess, JailStartError, JailUnavailable
from sandbox_cluster.pool import LocalPool, QueueFull
from tests.sandbox_cluster.jail_required import no_jail

LIMITS = Limits(time_s=3, memory_mb=256, output_mb=1)
DOUBLE = "print(int(input()) * 2)"
LAST_CORE = max(os.sched_getaffinity(0))


def make_pool(**options) -> LocalPool:
    options.setdefault("cores", [LAST_CORE])
    try:
        return LocalPool(**options)
    except JailUnavailable as exc:
        no_jail(f"no jail here: {exc}")


@pytest.fixture(scope="module")
def pool():
    pool = make_pool(slots=1)
    yield pool
    pool.close()


def test_run_returns_one_result_per_test_in_order(pool: LocalPool) -> None:
    tests = [TestCase(f"{i}\n", f"{2 * i}\n") for i in range(6)] + [TestCase("5", "11")]
    results = pool.run(DOUBLE, tests, LIMITS)
    assert [r.status for r in results] == [Status.SUCCESS] * 6 + [Status.WRONG_ANSWER]
    assert [r.stdout for r in results[:3]] == [b"0\n", b"2\n", b"4\n"]
    assert all(r.extra["backend"] == pool.backend.name for r in results)
    assert pool.run(DOUBLE, [], LIMITS) == []


def test_submit_returns_a_future(pool: LocalPool) -> None:
    future = pool.submit(DOUBLE, [TestCase("4", "8")], LIMITS)
    assert isinstance(future, concurrent.futures.Future)
    assert future.result(timeout=30)[0].status is Status.SUCCESS


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"interface": "graphql"}, "interface: must be one of"),
    ({"float_tolerance": -1.0}, "float_tolerance: must be a number >= 0"),
    ({"repeat_aggregate": "mean"}, "repeat_aggregate: must be one of"),
])
def test_bad_options_are_rejected_up_front(pool: LocalPool, kwargs, message) -> None:
    with pytest.raises(ValueError, match=message):
        pool.submit(DOUBLE, [TestCase("1")], LIMITS, **kwargs)


def test_function_inputs_are_validated_naming_the_test(pool: LocalPool) -> None:
    tests = [TestCase('{"a": 1}'), TestCase("[1, 2]")]
    with pytest.raises(ValueError, match=r"tests\[1\]\.input: must be a JSON object"):
        pool.submit("def solve(a): return []", tests, LIMITS, interface="function")
    with pytest.raises(ValueError, match=r"tests\[0\]\.input: is not JSON"):
        pool.submit("def solve(a): return []", [TestCase("{")], LIMITS, interface="function")
    with pytest.raises(TypeError, match=r"tests\[0\]: expected TestCase"):
        pool.submit(DOUBLE, ["1"], LIMITS)


def test_constructor_validation() -> None:
    with pytest.raises(ValueError, match="subset of usable"):
        LocalPool(cores=[10_000])
    with pytest.raises(ValueError, match=r"slots must be in \[1, 256\]"):
        LocalPool(slots=0)


def test_repeats_keep_every_duration_and_report_min_or_median(pool: LocalPool) -> None:
    program = ("import os, time\nn = len(os.listdir('/tmp'))\n"
               "time.sleep(0.05)\nprint('ok')")
    limits = Limits(time_s=3, memory_mb=256, output_mb=1, repeats=3)
    for aggregate, pick in (("min", min), ("median", sorted)):
        result = pool.run(program, [TestCase("", "ok")], limits, repeat_aggregate=aggregate)[0]
        durations = result.extra["durations_s"]
        assert result.status is Status.SUCCESS and len(durations) == 3
        expected = min(durations) if pick is min else sorted(durations)[1]
        assert result.duration_s == expected
    failing = pool.run("raise SystemExit(1)", [TestCase("")], limits)[0]
    assert failing.status is Status.RUNTIME_ERROR and "durations_s" not in failing.extra


def test_a_run_that_fails_on_a_later_repeat_is_not_a_success(pool: LocalPool) -> None:
    program = ("import random\nprint('ok' if random.random() < 0.5 else 'no')")
    limits = Limits(time_s=3, memory_mb=256, output_mb=1, repeats=12)
    result = pool.run(program, [TestCase("", "ok")], limits)[0]
    # 12 fair coin flips all 'ok' has probability 2**-12; the first failure decides.
    assert result.status is Status.WRONG_ANSWER


def test_stats_count_statuses_and_report_setup(pool: LocalPool) -> None:
    before = pool.stats()
    pool.run("raise SystemExit(4)", [TestCase(""), TestCase("")], LIMITS)
    after = pool.stats()
    assert after["status_counts"]["runtime_error"] == before["status_counts"]["runtime_error"] + 2
    assert after["tests"] == before["tests"] + 2 and after["jobs"] == before["jobs"] + 1
    assert after["slots"] == 1 and after["busy"] == 0 and after["queued"] == 0
    assert after["backend"] == pool.backend.name
    assert after["cores"] == [[LAST_CORE]]
    assert isinstance(after["degraded"], dict)


def test_stats_report_the_slots_cpu_time_where_the_host_accounts_it(pool: LocalPool) -> None:
    before = pool.stats()["slot_cpu_s"]
    assert len(before) == 1
    if before[0] is None:
        pytest.skip("no CPU accounting cgroup here")
    busy = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.05: pass"
    assert pool.run(busy, [TestCase("")], LIMITS)[0].status is Status.SUCCESS
    assert pool.stats()["slot_cpu_s"][0] >= before[0] + 0.05


def test_a_clean_jail_is_reused_and_the_next_program_finds_nothing(pool: LocalPool) -> None:
    litter = ("import os, subprocess\nopen('/tmp/litter', 'w').write('x')\n"
              "open('/dev/shm/litter', 'w').write('x')\nos.mkdir('/tmp/d')\nos.chmod('/tmp/d', 0)\n"
              "subprocess.Popen(['sleep', '30'], start_new_session=True)\nprint('littered')")
    check = ("import os\nprocs = [p for p in os.listdir('/proc') if p.isdigit()]\n"
             "print(len(procs), os.listdir('/tmp'), os.listdir('/dev/shm'))")
    assert pool.run(litter, [TestCase("", "littered")], LIMITS)[0].status is Status.SUCCESS
    starts = pool.stats()["jail_starts"]
    result = pool.run(check, [TestCase("")], LIMITS)[0]
    # the harness (pid 1 and the checking program's job process) and the program only
    assert result.stdout == b"3 [] []\n"
    assert pool.stats()["jail_starts"] == starts  # the same jail took the second program


def test_reuse_jails_off_gives_every_program_a_fresh_jail() -> None:
    with make_pool(slots=1, prestart=False, reuse_jails=False) as pool:
        pids = set()
        for _ in range(3):  # the harness's pid as the host sees it differs per jail
            result = pool.run("print(open('/proc/1/stat').read().split()[21])", [TestCase("")],
                              LIMITS)[0]
            pids.add(result.stdout)
        assert pool.stats()["jail_starts"] == 3 and len(pids) == 3


def test_concurrent_callers_get_their_own_results() -> None:
    with make_pool(slots=2, cores=sorted(os.sched_getaffinity(0))) as pool:
        errors: list[str] = []

        def caller(k: int) -> None:
            tests = [TestCase(f"{k * 10 + i}", f"{2 * (k * 10 + i)}") for i in range(3)]
            results = pool.run(DOUBLE, tests, LIMITS)
            if [r.status for r in results] != [Status.SUCCESS] * 3:
                errors.append(f"caller {k}: {[r.detail for r in results]}")

        threads = [threading.Thread(target=caller, args=(k,)) for k in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert pool.stats()["jobs"] == 6


def test_queue_limit_raises_queue_full_and_recovers() -> None:
    with make_pool(slots=1, queue_limit=1) as pool:
        slow = "import time\ntime.sleep(0.6)"
        running = pool.submit(slow, [TestCase("")], LIMITS)
        waiting = pool.submit(slow, [TestCase("")], LIMITS)
        with pytest.raises(QueueFull):
            pool.submit(slow, [TestCase("")], LIMITS)
        assert pool.stats()["queued"] + pool.stats()["busy"] == 2
        running.result(timeout=30)
        waiting.result(timeout=30)
        assert pool.run(DOUBLE, [TestCase("1", "2")], LIMITS)[0].status is Status.SUCCESS


def test_close_cancels_waiting_jobs_and_refuses_new_ones() -> None:
    pool = make_pool(slots=1, prestart=False)
    running = pool.submit("import time\ntime.sleep(0.5)", [TestCase("")], LIMITS)
    waiting = pool.submit(DOUBLE, [TestCase("1")], LIMITS)
    time.sleep(0.2)
    pool.close()
    assert running.result(timeout=30)[0].status is Status.SUCCESS
    assert waiting.cancelled()
    with pytest.raises(RuntimeError, match="closed"):
        pool.submit(DOUBLE, [TestCase("1")], LIMITS)


def test_jail_that_cannot_start_is_infra_error(monkeypatch) -> None:
    with make_pool(slots=1, prestart=False) as pool:
        def refuse(placement):
            raise JailStartError("simulated: no namespaces left")

        monkeypatch.setattr(pool.backend, "spawn", refuse)
        results = pool.run(DOUBLE, [TestCase("1"), TestCase("2")], LIMITS)
        assert [r.status for r in results] == [Status.INFRA_ERROR] * 2
        assert "simulated" in results[0].detail
        assert pool.stats()["jail_start_failures"] >= 1


def _dying_jail(backend, placement):
    """A jail whose harness writes one line to stderr and exits before its hello (as a jail
    tool refusing to start does)."""
    popen = backend._popen([sys.executable, "-c",
                            "import sys; sys.stderr.write('simulated jail refusal')"])
    return JailProcess(popen, None)


def _raising_spawn(backend, placement):
    raise KeyError("simulated bug in spawn")


@pytest.mark.parametrize(("broken_spawn", "cause"), [
    (_dying_jail, "simulated jail refusal"),
    (_raising_spawn, "KeyError: 'simulated bug in spawn'"),
])
def test_a_jail_that_fails_to_start_fails_that_job_and_the_slot_keeps_serving(
        monkeypatch, broken_spawn, cause) -> None:
    """A failed start once killed the slot's thread (its spare refill raised past
    the slot), so every later job on it waited forever. Now the job that needed the jail gets
    infra_error naming the cause, and the same (only) slot runs the jobs after it."""
    # reuse_jails=False: every job needs a jail started after the one before it ended.
    with make_pool(slots=1, prestart=True, reuse_jails=False) as pool:
        real_spawn = pool.backend.spawn
        failing = threading.Event()
        failing.set()
        monkeypatch.setattr(pool.backend, "spawn", lambda placement: (
            broken_spawn(pool.backend, placement) if failing.is_set() else real_spawn(placement)))
        # Job A may find a spare started before the patch; the refill after it cannot start.
        first = pool.submit(DOUBLE, [TestCase("1", "2")], LIMITS).result(timeout=120)
        assert first[0].status in (Status.SUCCESS, Status.INFRA_ERROR), first[0]
        # Job B: no spare, and no jail starts: infra_error, its detail naming the cause.
        failed = pool.submit(DOUBLE, [TestCase("2", "4"), TestCase("3", "6")],
                             LIMITS).result(timeout=120)
        assert [r.status for r in failed] == [Status.INFRA_ERROR] * 2, failed
        assert cause in failed[0].detail, failed[0].detail
        failing.clear()
        later = [pool.submit(DOUBLE, [TestCase(f"{i}", f"{2 * i}")], LIMITS)
                 for i in range(3)]
        assert [f.result(timeout=120)[0].status for f in later] == [Status.SUCCESS] * 3
        assert pool.stats()["jail_start_failures"] >= 1


def _harness_pids(outer_uid: int) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                status = (entry / "status").read_text()
            except OSError:
                continue
            uid = int(next(x for x in status.splitlines() if x.startswith("Uid:")).split()[1])
            cmdline = (entry / "cmdline").read_bytes()
            if uid == outer_uid and b"-c" in cmdline.split(b"\0") and b"python" in cmdline:
                pids.append(int(entry.name))
    return pids


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to find and kill the harness")
def test_harness_killed_mid_test_is_the_programs_failure_and_the_batch_goes_on() -> None:
    with make_pool(slots=1, prestart=False) as pool:
        outer_harness_uid = pool.backend.outside_uids(0)[0]
        killed = []

        def assassin() -> None:
            time.sleep(0.4)
            pids = _harness_pids(outer_harness_uid)
            # pid 1 of the jail (its parent is not a harness process): the kernel then ends
            # the job process too. Killing each pid found could hit a reused pid.
            for pid in pids:
                status = Path(f"/proc/{pid}/status").read_text()
                parent = int(next(x for x in status.splitlines()
                                  if x.startswith("PPid:")).split()[1])
                if parent not in pids:
                    os.kill(pid, signal.SIGKILL)
                    killed.append(pid)

        program = "import time\nif input() == 'slow':\n    time.sleep(1.5)\nprint('done')"
        thread = threading.Thread(target=assassin)
        thread.start()
        results = pool.run(program, [TestCase("slow", "done"), TestCase("fast", "done")], LIMITS)
        thread.join()
        assert killed, "found no harness to kill"
        assert results[0].status is Status.RUNTIME_ERROR, results[0]
        assert "harness lost" in results[0].detail
        assert results[1].status is Status.SUCCESS  # in a fresh jail
        assert pool.stats()["harness_lost"] == 1


@pytest.mark.parametrize("checker", [None, "def check(i, o, e):\n    return len(o) > 0\n"])
def test_supervisor_memory_does_not_grow_with_repeats(pool: LocalPool, checker) -> None:
    """Each run's output is judged when the run ends and dropped unless it is the one
    reported: the supervisor's peak Python memory stays near tests x output size, far from
    tests x repeats x output size (a different output every repeat, so none is shared)."""
    import tracemalloc

    output_mb, tests, repeats = 3, 4, 5
    program = f"import os\nprint(os.urandom({(output_mb << 20) // 2}).hex()[:{output_mb << 20}])"
    limits = Limits(time_s=5, memory_mb=256, output_mb=output_mb + 1, repeats=repeats)
    tracemalloc.start()
    try:
        results = pool.run(program, [TestCase("") for _ in range(tests)], limits,
                           checker=checker)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [r.status for r in results] == [Status.SUCCESS] * tests
    assert all(len(r.extra["durations_s"]) == repeats for r in results)
    one_output = output_mb << 20
    # held: one output per test, plus a few transient copies of the one being judged (the
    # checker input is JSON); before, every repeat of every test (tests x repeats + ...)
    assert peak < (tests + 6) * one_output, peak / one_output


@pytest.mark.parametrize("test", [TestCase("1 \ud800"), TestCase("1", "\udfff")])
def test_a_lone_surrogate_in_test_data_is_refused_naming_the_field(pool, test) -> None:
    field = "input" if "\ud800" in test.input else "expected"
    with pytest.raises(ValueError, match=rf"tests\[1\]\.{field}: holds a lone surrogate"):
        pool.submit(DOUBLE, [TestCase("1", "2"), test], LIMITS)
