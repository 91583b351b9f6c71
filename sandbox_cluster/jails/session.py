"""The supervisor's side of one jail: start it, load a program, run tests, validate results.

A `JailSession` owns one started jail (`JailProcess`) and speaks the harness protocol
(`harness.encode_frame`) over the jail's stdin/stdout, every read and write under a deadline.
`RawRun` is what one execution of one test produced, before any output checking.

Who is blamed when something breaks (the rule the rewards depend on):
- The jail fails to start, or the harness never says hello: `JailStartError` (infra_error;
  the caller may retry). Nothing of the program has run yet.
- The harness dies, hangs past the watchdog, or sends something malformed or impossible while
  a test of the program is in flight (after its input was sent): the program is presumed to
  have caused it, since it is the only untrusted code running. The run is a program failure
  (`failure="harness_lost"` -> runtime_error; `"watchdog"` -> timeout at the cap), and the
  session is dead: the caller starts a fresh jail for the remaining tests. A program that
  escapes a bad verdict by breaking the harness would otherwise teach a policy to do so.
- A child whose setup failed before any program code ran (reported over a pipe the program
  never holds): `failure="setup"` -> infra_error.

Outside cross-check: every result must answer the test id that was sent, with a duration no
longer than the wall time the supervisor itself measured from sending the test to receiving
its result (same host monotonic clock; the compile charge, which the harness adds to every
duration, is checked once against the wall time of the load), CPU time consistent with the
duration and the slot's cores (both exclude the same argument parse and include the same
compile charge: `harness` module docstring), and payloads within the caps. A violation is
treated as a broken harness (above).
The outside wall time is kept in `TestResult.extra["outside_wall_s"]`.

Small test inputs are pipelined: the next test's frame is sent right behind the current one,
so the harness never waits for the supervisor between tests.
"""

from __future__ import annotations

import json
import math
import os
import select
import time
from dataclasses import dataclass, field

from sandbox_cluster import harness
from sandbox_cluster.api import Limits
from sandbox_cluster.jails.base import JailBackend, JailProcess, JailStartError, Placement
from sandbox_cluster.jails.seccomp import build_filter

HELLO_DEADLINE_S = 20.0
COMPILE_DEADLINE_S = 30.0
# Beyond the test's own cap: the harness's kill/reap and scratch cleanup (2 x 2 s bounded in
# the harness), and frame transfer. Only a wedged harness ever uses it.
WATCHDOG_GRACE_S = 6.0
CLOCK_TOLERANCE_S = 0.002
CPU_TOLERANCE_S = 0.25
MAX_SOURCE_BYTES = 16 << 20
MAX_JOBS_PER_JAIL = 256
PIPELINE_MAX_BYTES = 16 << 10
TRANSFER_BYTES_PER_S = 50 << 20  # a floor on pipe throughput for the transfer allowance
READ_AHEAD_BYTES = 64 << 10


class HarnessLost(Exception):
    """The harness died, timed out or broke the protocol."""


@dataclass(frozen=True)
class RawRun:
    """One execution of one test, as measured inside the jail (plus outside observations)."""

    duration_s: float = 0.0
    cpu_s: float = 0.0
    child_cpu_s: float = 0.0  # the child's whole CPU time (what RLIMIT_CPU counts)
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    stdout: bytes = b""
    stdout_size: int = 0
    stderr_size: int = 0
    stderr: bytes = b""
    max_rss_kb: int = 0
    oom_killed: bool = False
    outside_wall_s: float = 0.0
    failure: str = ""  # "", "harness_lost", "watchdog", "setup", "input", "early", "not_run"
    detail: str = ""
    extra: dict = field(default_factory=dict)


class Channel:
    """Frames over the harness's pipes, each operation bounded by a deadline.

    Both pipes are non-blocking and every call tries the pipe before polling it; replies are
    read ahead into a buffer, so a small result frame (size, header, payloads) costs one
    read() instead of a poll() and a read() per piece."""

    def __init__(self, jail: JailProcess) -> None:
        self.jail = jail
        self._buffer = bytearray()
        self._readable = self._poller(jail.from_harness, select.POLLIN)
        self._writable = self._poller(jail.to_harness, select.POLLOUT)

    @staticmethod
    def _poller(fd: int, event: int) -> select.poll:
        os.set_blocking(fd, False)
        poller = select.poll()
        poller.register(fd, event | select.POLLHUP | select.POLLERR)
        return poller

    @staticmethod
    def _wait(poller: select.poll, deadline: float) -> None:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise TimeoutError("harness did not answer before the deadline")
            if poller.poll(max(1, math.ceil(remaining * 1000))):
                return

    def send(self, header: dict, payloads: tuple[bytes, ...], deadline: float) -> None:
        data = memoryview(harness.encode_frame(header, payloads))
        try:
            while data:
                try:
                    data = data[os.write(self.jail.to_harness, data):]
                except BlockingIOError:
                    self._wait(self._writable, deadline)
        except (BrokenPipeError, ConnectionResetError) as exc:
            raise HarnessLost(f"harness channel closed: {exc}") from exc

    def _read_exact(self, size: int, deadline: float) -> bytes:
        buffer = self._buffer
        while len(buffer) < size:
            try:
                chunk = os.read(self.jail.from_harness,
                                min(max(size - len(buffer), READ_AHEAD_BYTES), 1 << 20))
            except BlockingIOError:
                self._wait(self._readable, deadline)
                continue
            if not chunk:
                raise HarnessLost("harness exited")
            buffer += chunk
        with memoryview(buffer) as view:
            data = bytes(view[:size])
        if len(buffer) == size:
            self._buffer = bytearray()  # (and so drops the room a large payload needed)
        else:
            del buffer[:size]
        return data

    def recv(self, deadline: float, max_payloads: tuple[int, ...]) -> tuple[dict, list[bytes]]:
        (size,) = harness.FRAME_HEADER.unpack(self._read_exact(harness.FRAME_HEADER.size,
                                                               deadline))
        if size > harness.MAX_HEADER_BYTES:
            raise HarnessLost(f"frame header of {size} bytes")
        try:
            header = json.loads(self._read_exact(size, deadline))
            sizes = [int(n) for n in header.get("payload_sizes", [])]
        except (ValueError, TypeError, AttributeError) as exc:
            raise HarnessLost(f"malformed frame header: {exc}") from exc
        if len(sizes) > len(max_payloads) or any(
                n < 0 or n > cap for n, cap in zip(sizes, max_payloads)):
            raise HarnessLost(f"frame payloads {sizes} exceed {max_payloads}")
        return header, [self._read_exact(n, deadline) for n in sizes]


class JailSession:
    """One jail, started; then one program loaded; then its tests, one at a time."""

    def __init__(self, backend: JailBackend, placement: Placement) -> None:
        self.backend = backend
        self.placement = placement
        self.started_at = time.monotonic()
        self.jail = backend.spawn(placement)
        self.channel = Channel(self.jail)
        self.hello: dict = {}
        self.loaded = False
        self.jobs = 0  # programs loaded so far (a clean jail takes the next one)
        self.seccomp_active = False
        self.dead = False
        self.limits: Limits | None = None
        self.compile_charge_s = 0.0  # what the harness adds to each duration of this program
        self._oom_kills = placement.cgroup.oom_kills() if placement.cgroup else 0
        self._sent_ahead: dict[int, float] = {}  # test id -> when its frame was sent

    def await_hello(self) -> dict:
        try:
            header, _ = self.channel.recv(time.monotonic() + HELLO_DEADLINE_S, ())
        except (HarnessLost, TimeoutError, OSError) as exc:
            self.close()  # (kill keeps the jail's last stderr for the message)
            raise JailStartError(f"{self.backend.name} jail did not start: {exc}; "
                                 f"stderr: {self.jail.diagnostics()[-1500:]}") from exc
        if header.get("type") != "hello" or header.get("version") != harness.PROTOCOL_VERSION:
            self.close()
            raise JailStartError(f"unexpected first frame from the harness: {header}")
        self.hello = header
        return header

    def load(self, source: bytes, interface: str, limits: Limits,
             seccomp: bool = True) -> str | None:
        """Send the program; returns None when it compiled, else the compile error text.
        HarnessLost if the harness dies meanwhile (which the caller blames on the program);
        JailStartError if the harness refuses the job as unsafe (infra)."""
        child = self.backend.child_ids()
        header = {
            "type": "job", "interface": interface, "time_s": limits.time_s,
            "memory_mb": limits.memory_mb, "output_mb": limits.output_mb,
            "child_uid": child[0] if child else None, "child_gid": child[1] if child else None,
            "work_dir": self.backend.work_dir, "scratch_dirs": list(self.backend.scratch_dirs),
            "scratch_tmpfs": self.backend.scratch_tmpfs,
            "cpus": list(self.placement.cpus),
        }
        seccomp_filter = (build_filter() or b"") if seccomp else b""
        self.limits = limits
        self._oom_since_last()  # a new program starts from the slot's current OOM count
        try:
            sent_at = time.monotonic()
            self.channel.send(header, (source, seccomp_filter), sent_at + COMPILE_DEADLINE_S)
            reply, _ = self.channel.recv(time.monotonic() + COMPILE_DEADLINE_S, ())
            outside = time.monotonic() - sent_at
        except (HarnessLost, TimeoutError, OSError) as exc:
            self.close()
            raise HarnessLost(f"harness lost while compiling: {exc}") from exc
        if reply.get("type") != "compiled":
            self.close()
            raise HarnessLost(f"unexpected reply to the job: {reply}")
        try:
            self.compile_charge_s = float(reply.get("compile_charge_s", 0.0))
        except (TypeError, ValueError) as exc:
            self.close()
            raise HarnessLost(f"malformed compile charge: {exc}") from exc
        if not 0 <= self.compile_charge_s <= outside + CLOCK_TOLERANCE_S:
            self.close()
            raise HarnessLost(f"compile charge {self.compile_charge_s:.6f}s outside [0, "
                              f"{outside:.6f}s] measured by the supervisor")
        if reply.get("infra"):
            self.close()
            raise JailStartError(f"harness refused the job: {reply.get('error')}")
        self.jobs += 1
        self.loaded = bool(reply.get("ok"))
        self.seccomp_active = bool(reply.get("seccomp"))
        return None if self.loaded else str(reply.get("error", "compile error"))

    def run(self, test_id: int, data: bytes, next_test: tuple[int, bytes] | None = None,
            ) -> RawRun:
        """Run the loaded program on one input. Never raises for program behaviour.

        `next_test` (id, input), when small, is sent right behind this one, so the harness
        starts it without waiting for the supervisor to read and judge this result; the next
        call must then be for that test. At most one small frame is ever queued, so neither
        side can block the other on a full pipe."""
        limits = self.limits
        transfer_s = (len(data) + limits.output_mb * (2 << 20)) / TRANSFER_BYTES_PER_S
        start = time.monotonic()
        deadline = start + limits.time_s + WATCHDOG_GRACE_S + transfer_s
        caps = (limits.output_mb << 20, harness.STDERR_TAIL_BYTES)
        sent_at = self._sent_ahead.pop(test_id, None)
        try:
            if sent_at is None:
                sent_at = time.monotonic()
                self.channel.send({"type": "run", "id": test_id}, (data,), deadline)
            if next_test is not None and len(next_test[1]) <= PIPELINE_MAX_BYTES:
                self._sent_ahead[next_test[0]] = time.monotonic()
                self.channel.send({"type": "run", "id": next_test[0]}, (next_test[1],),
                                  deadline)
            header, payloads = self.channel.recv(deadline, caps)
            # From the moment the frame was sent: an upper bound on the child's lifetime.
            outside = time.monotonic() - sent_at
            return self._validate(test_id, header, payloads, outside, self._oom_since_last())
        except TimeoutError:
            self.close()
            return RawRun(duration_s=limits.time_s, timed_out=True, failure="watchdog",
                          outside_wall_s=time.monotonic() - start,
                          detail="harness unresponsive past the watchdog; jail killed")
        except (HarnessLost, OSError) as exc:
            oom = self._oom_since_last()
            self.close()
            return RawRun(failure="harness_lost", oom_killed=oom,
                          outside_wall_s=time.monotonic() - start,
                          detail=f"sandbox harness lost during the test: {exc}")

    def _oom_since_last(self) -> bool:
        """Whether the slot's cgroup OOM-killed anything since the previous test ended (the
        slot runs one jail, so that is during this test)."""
        if self.placement.cgroup is None:
            return False
        before, self._oom_kills = self._oom_kills, self.placement.cgroup.oom_kills()
        return self._oom_kills > before

    def _validate(self, test_id: int, header: dict, payloads: list[bytes], outside: float,
                  oom: bool) -> RawRun:
        if header.get("type") != "result" or header.get("id") != test_id:
            raise HarnessLost(f"result for {header.get('id')!r}, expected {test_id}")
        if "input_error" in header:
            return RawRun(failure="input", detail=f"test input: {header['input_error']}")
        try:
            duration, cpu = float(header["duration_s"]), float(header["cpu_s"])
            child_cpu = float(header["child_cpu_s"])
            charge = float(header["compile_charge_s"])
            stdout, stderr = payloads
        except (KeyError, TypeError, ValueError) as exc:
            raise HarnessLost(f"malformed result: {exc}") from exc
        ncpu = max(1, len(self.placement.cpus))
        if charge != self.compile_charge_s:
            raise HarnessLost(f"compile charge {charge}s, {self.compile_charge_s}s at load")
        if not (charge <= duration <= outside + charge + CLOCK_TOLERANCE_S):
            raise HarnessLost(f"duration {duration - charge:.6f}s (+ {charge:.6f}s compile "
                              f"charge) outside [0, {outside:.6f}s] measured by the supervisor")
        if not (0 <= cpu <= duration * ncpu * 1.05 + CPU_TOLERANCE_S):
            raise HarnessLost(f"cpu time {cpu:.3f}s impossible in {duration:.3f}s")
        if not (0 <= child_cpu <= outside * ncpu * 1.05 + CPU_TOLERANCE_S):
            raise HarnessLost(f"child cpu time {child_cpu:.3f}s impossible in {outside:.3f}s "
                              "measured by the supervisor")
        if header.get("leftover_processes", 0) < 0 or not header.get("cleanup_ok", False):
            self.close()  # the result stands; the next test needs a fresh jail
        failure, detail = "", ""
        if not header.get("setup_ok"):
            failure, detail = "setup", f"program child setup failed: {header.get('setup_error')}"
        return RawRun(
            duration_s=duration, cpu_s=cpu, child_cpu_s=child_cpu,
            exit_code=header.get("exit_code"),
            signal=header.get("signal"), timed_out=bool(header.get("timed_out")),
            stdout=stdout, stdout_size=int(header.get("stdout_size", len(stdout))),
            stderr_size=int(header.get("stderr_size", len(stderr))), stderr=stderr, max_rss_kb=int(header.get("max_rss_kb", 0)), oom_killed=oom,
            outside_wall_s=outside, failure=failure, detail=detail,
            extra={"leftover_processes": header.get("leftover_processes", 0),
                   "parse_s": header.get("parse_s", 0.0), "compile_charge_s": charge})

    def usable(self) -> bool:
        return not self.dead and self.jail.alive()

    def reusable(self) -> bool:
        """Whether the next program may use this jail: alive, clean (every test ended with
        its processes reaped and scratch emptied, else `_validate` closed it; no test sent
        ahead and left running, as when a run stops early), not too old."""
        age = time.monotonic() - self.started_at
        return (self.usable() and not self._sent_ahead and self.jobs < MAX_JOBS_PER_JAIL
                and age < self.backend.envelope.lifetime_s / 2)

    def close(self) -> None:
        if not self.dead:
            self.dead = True
            self._sent_ahead.clear()
            self.jail.kill()


def start_session(backend: JailBackend, placement: Placement) -> JailSession:
    """Spawn a jail and wait for its harness; JailStartError (infra) on failure."""
    session = JailSession(backend, placement)
    session.await_hello()
    return session


def probe_jail(backend: JailBackend) -> str | None:
    """Start one jail, run `print(1)` in it; None if that works, else the reason."""
    try:
        session = start_session(backend, Placement(slot=0, cpus=tuple(os.sched_getaffinity(0))))
    except JailStartError as exc:
        return str(exc)
    try:
        error = session.load(b"print(1)", "stdio", Limits(time_s=5, memory_mb=256))
        if error:
            return f"probe program did not compile: {error}"
        run = session.run(0, b"")
        if run.failure or run.exit_code != 0 or run.stdout.strip() != b"1":
            return (f"probe program failed in the jail: {run.failure} {run.detail} "
                    f"exit={run.exit_code} stderr={run.stderr[-500:]!r}")
        return None
    except (HarnessLost, JailStartError) as exc:
        return f"probe jail failed: {exc}"
    finally:
        session.close()
