"""Hostile programs against both jail backends (tests/sandbox_cluster/hostile/*.py).

Each case runs one hostile program through a real `LocalPool` and asserts:
- the verdict is the expected one (non-success for attacks; for forgery attempts that end by
  answering correctly, success with the TRUE duration), never infra_error;
- every test ended within its limit plus a small margin (supervisor-side wall time);
- the host is untouched: the canary file is unchanged, no process of the program uid is left,
  the host's loopback listener saw no connection, no secret reached the program's output;
- the same pool then runs a normal program correctly.
Short limits keep the whole suite (both backends) well under three minutes on 2 cores.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import JailUnavailable
from sandbox_cluster.pool import LocalPool
from tests.sandbox_cluster.jail_required import no_jail

pytestmark = pytest.mark.hostile
HOSTILE = Path(__file__).parent / "hostile"
MARGIN_S = 1.5
S, TO, WA, RE, ML, OL = (Status.SUCCESS, Status.TIMEOUT, Status.WRONG_ANSWER,
                         Status.RUNTIME_ERROR, Status.MEMORY_LIMIT, Status.OUTPUT_LIMIT)


@dataclass(frozen=True)
class Case:
    program: str
    statuses: tuple[frozenset, ...]  # allowed statuses, one set per test
    inputs: tuple[str, ...] = ("",)
    expected: tuple[str, ...] = ("42",)
    time_s: float = 3.0
    min_duration_s: float = 0.0  # a forged duration below this is a failure
    stdout_must_start: bytes = b""
    needs_memory_cgroup: bool = False
    table_entries: int = 0  # compile_time_table: the size of the literal written into it


TABLE_MODULUS = 1000003


def table_answer(queries: str) -> str:
    return str(sum(int(q) ** 2 % TABLE_MODULUS for q in queries.split()))


def hostile_source(case: Case) -> str:
    """The program's text; compile_time_table gets its tuple literal written in."""
    source = (HOSTILE / f"{case.program}.py").read_text()
    if case.table_entries:
        literal = "(" + ",".join(str(i * i % TABLE_MODULUS)
                                 for i in range(case.table_entries)) + ",)"
        source = source.replace("TABLE_LITERAL", literal)
    return source


def one(*statuses: Status) -> tuple[frozenset, ...]:
    return (frozenset(statuses),)


SECRET_ANSWERS = tuple(f"SECRET_{secrets.token_hex(16)}" for _ in range(3))
# The programs that allocate up to the 256 MB cap get 10 s: first-touching that much fresh
# memory on this VM under the suite's load took > 3 s of wall time once (2 s of CPU for 240 MB:
# raise_rlimits read as a timeout before its MemoryError), and the case is about the cap.
MEMORY_TIME_S = 10.0
CASES = [
    Case("fork_bomb", one(TO), time_s=1.0),
    Case("memory_bomb", one(ML), time_s=MEMORY_TIME_S),
    Case("memory_bomb_forked", one(ML), time_s=MEMORY_TIME_S, needs_memory_cgroup=True),
    Case("infinite_loop", one(TO), time_s=1.0),
    Case("sleep_forever", one(TO), time_s=1.0),
    Case("infinite_output", one(OL)),
    Case("infinite_stderr", one(OL)),
    Case("long_single_line", one(OL)),
    Case("write_outside", one(RE), inputs=("{canary}",), stdout_must_start=b"contained"),
    Case("read_host_files", one(RE), stdout_must_start=b"ENV"),
    Case("network_egress", one(RE), inputs=("{port}",), stdout_must_start=b"isolated"),
    Case("lingering_child", (frozenset({WA}), frozenset({S})), inputs=("spawn", "check"),
         expected=("42", "clean")),
    Case("kill_everything", one(S)),
    Case("recursion_crash", one(RE, ML)),
    Case("non_utf8_output", one(WA)),
    Case("stdout_closed_early", one(RE)),
    Case("fd_exhaustion", one(RE)),
    Case("thread_bomb", one(TO, RE), time_s=1.0),
    Case("fill_scratch", (frozenset({RE}), frozenset({S})) * 2,
         inputs=("fill /tmp", "check", "fill /dev/shm", "check"),
         expected=("42", "clean", "42", "clean")),
    Case("huge_stdin_read", one(S), inputs=("x" * (48 << 20),), expected=(str(48 << 20),)),
    Case("huge_stdin_ignored", one(S), inputs=("x" * (48 << 20),)),
    Case("kill_harness", one(S), min_duration_s=0.3),
    Case("write_result_channel", one(S), min_duration_s=0.3),
    Case("patch_clocks", one(S), min_duration_s=0.3),
    Case("fake_result_record", one(WA)),
    Case("raise_rlimits", one(ML), time_s=MEMORY_TIME_S),
    Case("signal_group", one(RE)),
    Case("read_other_answers", one(WA) * 3, inputs=("",) * 3, expected=SECRET_ANSWERS,
         stdout_must_start=b"nothing"),
    Case("exit_early", one(WA), expected=("1 2 3",)),
    Case("os_exit_unflushed", one(WA), expected=("1 2 3",)),
    Case("ctypes_syscalls", one(RE), stdout_must_start=b"blocked"),
    Case("core_dump", one(RE)),
    Case("fake_memory_error", one(RE)),
    Case("vsock_socket", one(RE), stdout_must_start=b"refused"),
    Case("inotify_hoard", one(RE), stdout_must_start=b"refused"),
    # a SIGXCPU below the CPU limit is no timeout, however it was sent
    Case("forged_sigxcpu", one(RE) * 3, inputs=("kill", "raise", "rlimit"),
         expected=("42",) * 3, time_s=5.0),
    # compile time is paid for (the gain is measured in
    # test_a_table_built_by_the_compiler_is_paid_for)
    Case("compile_time_table", one(S), inputs=("1 5 299999",),
         expected=(table_answer("1 5 299999"),), time_s=10.0, table_entries=300_000),
]


@dataclass
class Host:
    """What the host looks like from outside the jail, to check it stays untouched."""

    pool: LocalPool
    canary: Path
    canary_text: str
    listener: socket.socket
    secret: str

    def program_uids(self) -> set[int]:
        backend = self.pool.backend
        return {backend.outside_uids(slot)[1] for slot in range(self.pool.stats()["slots"])}


def _processes_of(uids: set[int]) -> list[str]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            status = (entry / "status").read_text()
        except OSError:
            continue
        uid_line = next(line for line in status.splitlines() if line.startswith("Uid:"))
        if int(uid_line.split()[1]) in uids:
            found.append(entry.name)
    return found


@pytest.fixture(scope="module", params=["nsjail", "bwrap"])
def host(request):
    secret = f"hunter2-{secrets.token_hex(8)}"
    os.environ["SANDBOX_TEST_SECRET"] = secret
    try:
        pool = LocalPool(backend=request.param, slots=1, cores=[max(os.sched_getaffinity(0))])
    except JailUnavailable as exc:
        no_jail(f"{request.param} cannot run here: {exc}")
    with tempfile.NamedTemporaryFile("w", dir="/tmp", prefix="canary-", delete=False) as f:
        f.write("canary " + secret)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    listener.setblocking(False)
    yield Host(pool, Path(f.name), "canary " + secret, listener, secret)
    pool.close()
    listener.close()
    os.unlink(f.name)
    os.environ.pop("SANDBOX_TEST_SECRET", None)


@pytest.mark.parametrize("case", CASES, ids=[c.program for c in CASES])
def test_hostile_program(host: Host, case: Case) -> None:
    if case.needs_memory_cgroup and "memory" in host.pool.degraded:
        pytest.skip("no memory cgroup: a forked memory bomb would reach the host")
    port = host.listener.getsockname()[1]
    inputs = [text.format(canary=host.canary, port=port) for text in case.inputs]
    tests = [TestCase(text, expected) for text, expected in zip(inputs, case.expected)]
    limits = Limits(time_s=case.time_s, memory_mb=256, output_mb=1)

    results = host.pool.run(hostile_source(case), tests, limits)

    for index, (result, allowed) in enumerate(zip(results, case.statuses)):
        where = f"{case.program}[{index}] {result.status}: {result.detail!r} {result.stdout[:200]!r}"
        assert result.status in allowed, where
        assert result.extra["outside_wall_s"] <= case.time_s + MARGIN_S, where
        assert result.duration_s <= case.time_s, where
        if result.status is Status.TIMEOUT:
            assert result.duration_s == case.time_s, "a timeout is recorded at the cap"
        if result.status is Status.SUCCESS:
            assert result.duration_s >= case.min_duration_s, f"forged duration: {where}"
        assert result.stdout.startswith(case.stdout_must_start), where
        assert b"ESCAPED" not in result.stdout and host.secret.encode() not in result.stdout
    assert host.canary.read_text() == host.canary_text
    assert _processes_of(host.program_uids()) == [], "a program process outlived its test"
    with pytest.raises(BlockingIOError):
        host.listener.accept()
    normal = host.pool.run("print(int(input()) * 2)", [TestCase("21\n", "42\n")], limits)
    assert normal[0].status is Status.SUCCESS, normal[0]


def _marker() -> str:
    return f"MARK_{secrets.token_hex(12)}"


def test_no_memory_remnants(host: Host) -> None:
    """What a test's child can see is exactly its own input: a dumpable program scanning its
    whole address space finds no marker of other tests' inputs or outputs, nor of the expected
    outputs a previous checker job held, in a jail reused for program after program."""
    limits = Limits(time_s=5.0, memory_mb=256, output_mb=1)
    checker = "def check(test_input, output, expected):\n    return output.split() == expected.split()\n"
    secret_in, secret_expected = _marker(), _marker()
    checked = host.pool.run("print(input())", [TestCase(secret_in, secret_expected)], limits,
                            checker=checker)
    assert checked[0].status is Status.WRONG_ANSWER, checked[0]
    big = "x" * (300 << 10)  # inputs large enough to take glibc's heap path, not only pymalloc
    program = (HOSTILE / "scan_memory.py").read_text()
    for _ in range(2):  # twice: the second program runs after the first in a reused jail
        markers = [_marker() for _ in range(4)]
        tests = [TestCase(f"{mark}\n{big if k % 2 else ''}", f"{mark} clean scanned")
                 for k, mark in enumerate(markers)]
        results = host.pool.run(program, tests, limits)
        for result in results:
            assert result.status is Status.SUCCESS, (result.stdout[:200], result.stderr[-500:])
    function = (HOSTILE / "scan_memory_function.py").read_text()
    markers = [_marker() for _ in range(4)]
    tests = [TestCase(json.dumps({"mark": mark, "pad": big if k % 2 else ""}), f"{mark} clean")
             for k, mark in enumerate(markers)]
    for result in host.pool.run(function, tests, limits, interface="function"):
        assert result.status is Status.SUCCESS, (result.stdout[:200], result.stderr[-500:])


def test_repeats_cannot_communicate(host: Host) -> None:
    """Each repeat is a fresh child from a state that holds nothing of the previous run: a
    program that leaves its answer on stderr and searches its memory for it on the next run
    still pays the full cost every run, so the reported minimum is the real cost."""
    limits = Limits(time_s=3.0, memory_mb=256, output_mb=1, repeats=3)
    program = (HOSTILE / "repeat_shortcut.py").read_text()
    results = host.pool.run(program, [TestCase("21", "42"), TestCase("5", "10")], limits)
    for result in results:
        assert result.status is Status.SUCCESS, result
        assert len(result.extra["durations_s"]) == 3
        assert min(result.extra["durations_s"]) >= 0.4, result.extra["durations_s"]
        assert result.duration_s >= 0.4


def test_a_table_built_by_the_compiler_is_paid_for(host: Host) -> None:
    """The tuple-literal table used to read 0.023 s against 0.072 s for building it at run
    time (its ~3 s compile went unmeasured). Its compile time is now charged to every test:
    it is slower than the honest program, by about what compiling it takes."""
    case = next(c for c in CASES if c.program == "compile_time_table")
    source = hostile_source(case)
    start = time.process_time()
    compile(source, "main.py", "exec")
    compile_s = time.process_time() - start
    honest = (HOSTILE / "compile_time_table.py").read_text().replace(
        "TABLE_LITERAL", f"tuple(i * i % {TABLE_MODULUS} for i in range({case.table_entries}))")
    limits = Limits(time_s=10.0, memory_mb=256, output_mb=1, repeats=3)
    tests = [TestCase(case.inputs[0], case.expected[0])]
    table, built = (host.pool.run(program, tests, limits)[0] for program in (source, honest))
    assert (table.status, built.status) == (S, S), (table, built)
    # the honest build compiles within the allowance: its charge is CPU time, so a loaded host
    # (which read a 0.33 ms charge when the charge was wall time) cannot move it off 0
    assert built.extra["compile_charge_s"] == 0.0
    assert table.duration_s > compile_s / 2, (table.duration_s, compile_s)
    assert table.duration_s > built.duration_s, (table.duration_s, built.duration_s)
