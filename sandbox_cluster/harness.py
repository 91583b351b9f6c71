"""The warm fork-server that runs INSIDE a jail and times each test of a program.

Started by a jail backend as `python -s -P -B -c <this file's source>` in the jail's clean
environment; standard library only, no package imports, so it starts in a few tens of
milliseconds. It first re-execs itself once with a fixed hash seed and ASLR off (see
`_pin_layout`: per-process speed luck would otherwise be as large as the differences rankings
are made of). The supervisor (`jails.session`)
drives it over the harness's own stdin/stdout with length-prefixed frames:

    harness    -> hello    {version, pid, uid}
    supervisor -> job      {interface, limits, child uid/gid, cpus, ...} + [source, seccomp]
    harness    -> compiled {ok, error, infra, compile_s, compile_charge_s}
    supervisor -> run      {id} + [test input]          (one test at a time, any number)
    harness    -> result   {id, duration_s, cpu_s, child_cpu_s, parse_s, exit_code, ...}
                           + [stdout, stderr]
    supervisor -> job ...  (a clean jail takes the next program) | end | EOF

Two levels of fork keep the child's address space down to its own input. pid 1 never reads
a program, an input or an output: for each job it forks a *job process*, which loads that one
program and runs its tests, and which exits when the next job (or the end) arrives; so nothing
one job held (its source, a checker's inputs and expected outputs) is in the next job's
memory. For each test the job process forks a fresh child from its warm state (the program
was compiled once), so no module, global, cache or file state carries from one test to the
next. The test input goes from the channel into a memfd that becomes the child's stdin, and
stdout/stderr are memfds whose contents go back into the channel, all by splice(2) (or a
MADV_DONTFORK buffer), never through a Python object: a freed bytes object stays readable in
the heap that every later child inherits, so the job process must never make one. Function
and checker programs parse their JSON arguments in the child, before program code runs. No
reader competes with the program for its pinned core, and a pipe can never deadlock on a huge
input. The child drops to the program uid, applies rlimits and runs the program, while the
job process sleeps in poll() on a pidfd.

What a result measures (the contract the supervisor checks and the rewards rely on):
- duration_s: CLOCK_MONOTONIC from just before fork() to the child's exit, read as soon as the
  exit is seen (before the reap, the kill of leftover processes and the scratch clean-up,
  which are harness work), less the wall time of the argument parse, plus the compile charge;
- cpu_s: the child's CPU time from wait4's rusage, less the parse's CPU time (the child's
  CLOCK_PROCESS_CPUTIME_ID around it), plus the compile charge's CPU time. Wall and CPU time
  leave out the same parse, so the supervisor's "CPU time possible in this duration" check
  compares like with like (a 60 MB argument parses in ~1 s); child_cpu_s is the rusage as is,
  which is what RLIMIT_CPU counts;
- the compile charge: the job process compiles the program once, before any fork, and
  CPython folds constant expressions then (a 1.5M-entry tuple literal is built in ~3 s). The
  compile's CPU time beyond `COMPILE_ALLOWANCE_NS` is added to every test's duration and CPU
  time (a charged duration that reaches the cap is a timeout); within the allowance (every
  ordinary program) durations exclude compilation, as the stored reference durations do.
  CPU time, because compiling only computes: its wall time on a loaded host also holds the
  waits for a core, which would charge an honest program for its neighbours.
All of these are read by the job process, which the program can neither signal, trace nor
write to, so nothing the program does moves them.

Threat model (what the child can and cannot do), in order of the defences:
- Results travel only over fds 0/1 of this process. The child replaces fds 0-2 with its memfds
  and closes every other fd before any program code runs, so it never holds the channel; the
  program's stdout is data, never parsed as a frame.
- The child runs under a different uid than this process (when the jail maps two uids: the
  0 -> non-zero switch makes the kernel clear every capability), with NO_NEW_PRIVS: it cannot
  signal, ptrace or open /proc/<pid>/fd of the harness. Both harness processes are
  PR_SET_DUMPABLE 0 (ptrace, /proc/<pid>/{fd,mem,environ} refused even to their own uid);
  pid 1 of the jail's pid namespace also gets no SIGKILL/SIGSTOP sent from inside, and no
  handler is installed for any other signal (SIGINT is reset to the default).
- A seccomp filter (`jails.seccomp`), installed in the job process and so inherited by every
  child, refuses ptrace, process_vm_*, pidfd_getfd, namespaces, mounts,
  sched_setaffinity (leaving the pinned core), prlimit on other processes, SysV IPC and POSIX
  message queues (which would outlive a test) and other kernel surface. The harness needs none
  of those calls.
- Hard rlimits set in the child cannot be raised (no CAP_SYS_RESOURCE).
- After each test the job process SIGKILLs every other process of the pid namespace
  (kill(-1), which spares pid 1 and the caller), reaps them (it is their subreaper), and empties the scratch directories with a helper running as the program
  uid, so no process or file is left for the next test or program.
- Expected outputs never enter a program's jail (checking happens outside, or in a checker
  job), and no input or output of another test or job is in the child's address space (see
  above): a program that makes itself dumpable and reads all of /proc/self/mem finds its own
  input only. Repeats of a test are fresh children too, so one run cannot leave its answer
  for the next.
If the program nevertheless kills or wedges this process, the supervisor scores the test in
flight as a program failure (runtime_error), never as an infra error.

Per-test cost. After fork() every page either process writes first costs a page fault, and a
copy while both map it (~3 us each on a Firecracker guest, ~1 us for the parent's own pages
once the child is gone), so throughput is mostly a count of pages touched per test. What can
be made once is made once per job, before any fork: imports, the program's stdio streams and
sys.argv (installed in this process, which never uses sys.std*; children inherit them in
place), the rlimit values, a poll object for the children's pidfds, and each test's __main__
module just before its fork; symbols are bound at start-up; gc.freeze() keeps the collector
off inherited objects. A trivial test then costs ~210 faults in the child (~110 of them are
any forked CPython's floor) and ~170 in this process, ~1 ms of CPU in all. None of this moves
the measured window, which still spans fork() to the child's exit.
"""

from __future__ import annotations

import atexit
import builtins
import contextlib
import gc
import io
import json
import os
import resource
import select
import signal
import struct
import sys
import time
import types

PROTOCOL_VERSION = 2
FRAME_HEADER = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20
MiB = 1 << 20
# Exit status of a child whose setup (before any program code) failed; told apart from a
# program's own exit code by the setup pipe, which only harness code in the child writes to.
SETUP_FAILED_EXIT = 121
CHILD_NOFILE = 256
CHILD_NPROC = 64
STDERR_TAIL_BYTES = 8192
CLEANUP_DEADLINE_S = 2.0
# Compile time the job process spends beyond this is charged to every test (see
# `_Job.charge_ns`). The 247 solutions of the mini data set (10-60 lines) compile there in
# 1.3 ms (median; 2.2 ms at most, on the shared 2-core VM), so ordinary programs are timed as
# the stored reference durations were, compilation excluded (docs/design/sandbox-timing.md §1.8),
# while a program that moves work into the compiler (a folded table literal) gains at most this much
# per test.
COMPILE_ALLOWANCE_NS = 5_000_000
# Imported once in the warm harness so that `import math` costs every program and test the
# same, outside the measured duration. Not `threading` or `random`: their at-fork hooks would
# add ~0.5 ms to every fork, so a program that uses them pays for its own import instead.
PRELOAD_MODULES = ("array", "bisect", "collections", "copy", "functools", "heapq", "io",
                   "itertools", "math", "operator", "re", "string", "traceback", "typing")
PR_SET_DUMPABLE, PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 4, 38, 22, 2
PR_SET_CHILD_SUBREAPER = 36
MADV_DONTFORK = 10  # (not exported by every CPython's mmap module)
_PARSE_REPORT = struct.Struct(">QQ")  # a child's argument parse: wall ns, CPU ns
COPY_CHUNK = 1 << 20
PR_GET_SECUREBITS = 27
ADDR_NO_RANDOMIZE = 0x0040000
SECBIT_KEEP_CAPS_OR_NO_SETUID_FIXUP = 0x11  # either would let capabilities survive setuid


# --- framing (also imported by the supervisor) --------------------------------------------

# One encoder: json.dumps with options builds a new one per call, ~60 page faults per frame in
# a process that forks between frames (see run_test).
_JSON = json.JSONEncoder(separators=(",", ":"))


def encode_frame(header: dict, payloads: tuple[bytes, ...] = ()) -> bytes:
    """4-byte big-endian header length, the JSON header, then the raw payloads whose sizes the
    header lists under "payload_sizes"."""
    data = _JSON.encode(dict(header, payload_sizes=[len(p) for p in payloads])).encode()
    return b"".join((FRAME_HEADER.pack(len(data)), data, *payloads))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, size: int) -> bytes:
    """Blocking read of exactly `size` bytes; EOFError on a closed channel."""
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, MiB))
        if not chunk:
            raise EOFError(f"channel closed with {remaining} of {size} bytes unread")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def _read_header_bytes(fd: int) -> bytes:
    """The JSON header of the next frame on `fd`, unparsed, reading nothing beyond it (the
    payloads stay in the pipe for `_Pump`)."""
    try:
        (size,) = FRAME_HEADER.unpack(read_exact(fd, FRAME_HEADER.size))
    except EOFError:
        return b""
    if size > MAX_HEADER_BYTES:
        raise ValueError(f"frame header of {size} bytes exceeds {MAX_HEADER_BYTES}")
    return read_exact(fd, size)


def _write_frame_header(fd: int, header: dict, sizes: list[int]) -> None:
    data = _JSON.encode(dict(header, payload_sizes=sizes)).encode()
    write_all(fd, FRAME_HEADER.pack(len(data)) + data)


class _Pump:
    """Moves test data between the channel and the memfds without it ever entering this
    process's memory: splice(2) through the kernel, else (splice refused) through one 1 MiB
    mmap marked MADV_DONTFORK, which no child maps. A freed Python bytes object stays
    readable in the heap every later child inherits (see the module docstring); this never
    makes one."""

    def __init__(self) -> None:
        self.splice = hasattr(os, "splice")
        self.buffer = None

    def _view(self, size: int) -> memoryview:
        if self.buffer is None:
            import mmap

            self.buffer = mmap.mmap(-1, COPY_CHUNK)
            self.buffer.madvise(MADV_DONTFORK)
        return memoryview(self.buffer)[:size]

    def copy(self, src: int, dst: int, size: int, offset: int | None = None) -> None:
        """`size` bytes from `src` (from `offset`, else its position) to `dst`."""
        while size > 0:
            chunk = min(size, COPY_CHUNK)
            if self.splice:
                try:
                    moved = os.splice(src, dst, chunk, offset_src=offset)
                except OSError as exc:
                    if exc.errno not in (22, 38):  # EINVAL, ENOSYS: this pair cannot splice
                        raise
                    self.splice = False
                    continue
            else:
                view = self._view(chunk)
                moved = os.preadv(src, [view], offset) if offset is not None else os.readv(
                    src, [view])
                write_all(dst, view[:moved])
            if moved <= 0:
                raise EOFError(f"{size} bytes short")
            size -= moved
            if offset is not None:
                offset += moved


# --- this process -------------------------------------------------------------------------


def _prctl(option: int, arg2=0) -> int:
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    result = libc.prctl(option, arg2, 0, 0, 0)
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}): {os.strerror(err)}")
    return result


def _install_seccomp(filter_bytes: bytes) -> None:
    """Load a classic-BPF program (array of 8-byte sock_filter) into this process for good."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    prog = SockFprog(len(filter_bytes) // 8, ctypes.addressof(buffer))
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "seccomp filter rejected")


def _pin_layout() -> None:
    """Re-exec once with a fixed str hash seed and no address-space randomization.

    A module-level loop runs up to ~15% faster in one CPython process than in another (dict
    layouts from the hash seed, heap and stack addresses from ASLR). Fixing both makes every
    jail's interpreter the same, so reruns, slots and hosts agree; set iteration order (and so
    some programs' output) becomes reproducible too. It costs no isolation: ASLR protects a
    process from its own inputs, and the program is arbitrary code already.

    The re-exec also binds every dynamic symbol at start-up (LD_BIND_NOW): lazily bound,
    each forked child would resolve again every libc function the harness never called,
    ~15 page faults per test inside the measured duration."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    persona = libc.personality(0xFFFFFFFF)
    if os.environ.get("SANDBOX_HARNESS_REEXEC") or persona < 0:
        os.environ.pop("LD_BIND_NOW", None)  # this process only, not the program's children
        return  # pinned, or could not pin it: run as is rather than loop
    libc.personality(persona | ADDR_NO_RANDOMIZE)
    with open("/proc/self/cmdline", "rb") as cmdline:
        argv = [arg.decode("utf-8", "surrogateescape") for arg in cmdline.read().split(b"\0")[:-1]]
    env = dict(os.environ, PYTHONHASHSEED="0", SANDBOX_HARNESS_REEXEC="1", LD_BIND_NOW="1")
    os.execve(sys.executable, argv, env)


def _cap_eff() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


def cpu_rlimit_s(time_s: float) -> int:
    """The soft RLIMIT_CPU of a test's child under a `time_s` wall cap (the hard limit is one
    more): whole seconds, the kernel's unit, rounded up and one past the cap, so that the wall
    clock ends a single-threaded run first. `checking.classify` compares a SIGXCPU death's CPU
    time with this: below it, the program sent the signal itself."""
    return -(-int(time_s * 1e9) // 1_000_000_000) + 1


class _Job:
    """One loaded program: the job header as attributes, the code, prebuilt output streams."""

    def __init__(self, header: dict, code, compile_cpu_ns: int = 0,
                 ) -> None:
        self.interface = header["interface"]  # "stdio" | "function" | "checker"
        self.entry = "check" if self.interface == "checker" else "solve"
        self.time_ns = int(header["time_s"] * 1e9)
        self.memory_bytes = int(header["memory_mb"]) * MiB
        self.output_bytes = int(header["output_mb"]) * MiB
        self.child_uid = header.get("child_uid")
        self.child_gid = header.get("child_gid")
        self.work_dir = header["work_dir"]
        self.scratch_dirs = list(header.get("scratch_dirs") or [self.work_dir])
        self.code = code
        # Compile CPU time past the allowance, added to every test's duration and CPU time:
        # CPython folds constant expressions (a 1.5M-entry tuple literal is built in ~3 s), and
        # work done here before the fork is otherwise never measured. CPU, not wall time:
        # compiling is pure computation, and on a loaded host the wall clock also counts the
        # time the job process waited for a core (a 2-core CI run charged `pass` 0.9 ms).
        self.charge_ns = max(0, compile_cpu_ns - COMPILE_ALLOWANCE_NS)
        self.charge_cpu_ns = self.charge_ns
        # One setup pipe per job: the child writes one byte on it before any program code
        # runs; read without blocking once the child is gone (nothing left could write).
        self.setup_r, self.setup_w = os.pipe()
        os.set_blocking(self.setup_r, False)
        # A tmpfs directory's size grows by 20 bytes per entry, so on the jails' tmpfs scratch
        # dirs one stat tells whether a test left anything (elsewhere, None: listdir).
        self.scratch = tuple(
            (d, os.stat(d).st_size if header.get("scratch_tmpfs") and not os.listdir(d) else None)
            for d in self.scratch_dirs if os.path.isdir(d))
        # One poll object for the job's children (pidfds; kernels before 5.3 have none).
        self.poller = select.poll() if hasattr(os, "pidfd_open") else None
        # The child's wall budget is the whole cap, charge or not: a charged duration that
        # reaches the cap is a timeout all the same (`checking.classify`), and a child killed
        # in its setup by a budget the charge shortened would read as a setup failure.
        self.time_ms = -(-self.time_ns // 1_000_000)
        # Built once here, used only in children (where fds 0-2 are the memfds): CPython's own
        # shape under a UTF-8 locale, stdout block-buffered, stderr line-buffered. Building
        # them per child costs ~0.15 ms of copy-on-write faults; the price is that stdin
        # reports itself unseekable (as a pipe would).
        self.stdin = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)),
                                      encoding="utf-8", errors="strict")
        self.stderr = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w", closefd=False)),
                                       encoding="utf-8", errors="backslashreplace",
                                       line_buffering=True)
        self.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
                                       encoding="utf-8", errors="strict")
        # Only the limits the harness itself must not have; NOFILE, NPROC and CORE were set on
        # the harness at load and are inherited. AS last: once capped, setup could fail.
        cpu_s = cpu_rlimit_s(header["time_s"])
        self.rlimits = ((resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
                        (resource.RLIMIT_FSIZE, (self.output_bytes, self.output_bytes)),
                        (resource.RLIMIT_AS, (self.memory_bytes, self.memory_bytes)))

    def install_streams(self) -> None:
        """Make the job's streams sys.std* in this process, once per job, so that a child
        inherits them in place: swapping them in every child costs ~50 copy-on-write page
        faults (~0.15 ms) there. Function and checker programs return their answer; their
        prints go to stderr. The harness itself never writes to sys.std*, and the streams it
        started with stay referenced (never finalised in a child)."""
        sys.stdin = sys.__stdin__ = self.stdin
        sys.stderr = sys.__stderr__ = self.stderr
        sys.stdout = sys.__stdout__ = self.stdout if self.interface == "stdio" else self.stderr
        sys.argv = ["main.py"]


# --- the child: setup, then the program -----------------------------------------------------


def _child_setup(job: _Job, fds: tuple[int, int, int]) -> None:
    os.setsid()
    os.dup2(fds[0], 0)
    os.dup2(fds[1], 1)
    os.dup2(fds[2], 2)
    if job.setup_w != 3:
        os.dup2(job.setup_w, 3)
    os.closerange(4, 1 << 20)
    if job.child_uid is not None:  # (the harness checked at load that it has no groups)
        os.setresgid(job.child_gid, job.child_gid, job.child_gid)
        os.setresuid(job.child_uid, job.child_uid, job.child_uid)


class _InputError(Exception):
    """The test input of a function or checker program is not a JSON object."""


def _read_args() -> dict:
    """The arguments of a function or checker program, parsed here in the child from its
    stdin memfd: the harness never holds a test's data (see `_Pump`). Stdin is rewound, so
    the program may read the raw JSON as before."""
    size = os.fstat(0).st_size
    data = os.pread(0, size, 0) if size else b""
    try:
        args = json.loads(data)
    except (ValueError, RecursionError) as exc:
        raise _InputError(f"{type(exc).__name__}: {exc}"[:500]) from None
    if not isinstance(args, dict):
        raise _InputError("not a JSON object")
    return args


def _exit_status(code) -> int:
    """CPython's mapping of `SystemExit.code` to a process exit status."""
    if code is None or isinstance(code, int):
        return (code or 0) & 0xFF
    with contextlib.suppress(BaseException):
        print(code, file=sys.stderr)
    return 1


def _answer_bytes(job: _Job, module, args: dict) -> bytes:
    entry = getattr(module, job.entry, None)
    if not callable(entry):
        raise NameError(f"program defines no callable {job.entry}()")
    if job.interface == "function":
        lines = entry(**args)
        if not isinstance(lines, (list, tuple)) or not all(isinstance(x, str) for x in lines):
            raise TypeError(f"{job.entry}() must return list[str], got {type(lines).__name__}")
        return "\n".join(lines).encode("utf-8", "surrogateescape")
    value = entry(args["test_input"], args["program_output"], args["expected_output"])
    if isinstance(value, bool):
        reply = {"kind": "bool", "value": value}
    elif isinstance(value, (int, float)):
        reply = {"kind": "score", "value": float(value)}
    elif isinstance(value, str):
        reply = {"kind": "str", "value": value[:1000]}
    else:
        reply = {"kind": "other", "type": type(value).__name__}
    return json.dumps(reply).encode()


def _run_program(job: _Job, module: types.ModuleType, args: dict | None) -> int:
    status, answer = 0, None
    try:
        exec(job.code, module.__dict__)
        if job.interface != "stdio":
            answer = _answer_bytes(job, module, args)
    except SystemExit as exc:
        status = _exit_status(exc.code)
    except BaseException as exc:
        status = 1
        try:
            import traceback

            tb = exc.__traceback__
            while tb is not None and tb.tb_frame.f_code.co_filename == "<string>":
                tb = tb.tb_next  # the harness's frames are not the program's business
            traceback.print_exception(type(exc), exc, tb)
        except BaseException:
            os.write(2, f"\n{type(exc).__name__}\n".encode())
    try:  # what CPython does at exit: join non-daemon threads, run atexit hooks
        if "threading" in sys.modules:
            sys.modules["threading"]._shutdown()
        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):  # as CPython at exit: closed or None is skipped
        try:
            if stream is not None and not stream.closed:
                stream.flush()
        except BaseException:
            status = status or 120  # CPython's status when flushing stdout fails at exit
    if answer is not None and status == 0:
        try:
            write_all(1, answer)
        except OSError:
            status = 120
    return status


def _child_main(job: _Job, fds: tuple[int, int, int], module: types.ModuleType):
    """Never returns: whatever happens, the forked child must not fall back into the
    harness's main loop. Before any program code runs it reports on the setup pipe: b"1" and
    how long parsing its arguments took in wall and in CPU time (function and checker
    programs; subtracted from the duration and the CPU time, as that parse is the harness's
    work), b"I" + why the input is unusable, or b"0" + why setup failed."""
    status = SETUP_FAILED_EXIT
    try:
        try:
            _child_setup(job, fds)
            args, parse_ns, parse_cpu_ns = None, 0, 0
            if job.interface != "stdio":
                start, start_cpu = time.monotonic_ns(), time.process_time_ns()
                args = _read_args()
                parse_ns = time.monotonic_ns() - start
                parse_cpu_ns = time.process_time_ns() - start_cpu
            for limit, value in job.rlimits:
                resource.setrlimit(limit, value)
        except _InputError as exc:
            os.write(3, b"I" + str(exc).encode()[:2000])
            return
        except BaseException as exc:
            os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])
            return
        os.write(3, b"1" + _PARSE_REPORT.pack(parse_ns, parse_cpu_ns))
        os.close(3)
        status = 1
        status = _run_program(job, module, args)
    finally:
        os._exit(status)


# --- the harness side of one test -----------------------------------------------------------


def _wait_exit(pid: int, timeout_ms: int, poller) -> bool:
    """Sleep until `pid` exits or `timeout_ms` pass; True if it exited. No signal handler
    (pid 1 must not install one); the child stays a zombie for wait4. Called right after
    fork(), while every page this process writes is still shared with the child and so gets
    copied: few steps, on objects made beforehand (`poller`, a `select.poll()`)."""
    if poller is not None:
        pidfd = os.pidfd_open(pid)
        poller.register(pidfd, select.POLLIN)
        try:
            return bool(poller.poll(timeout_ms))
        finally:
            poller.unregister(pidfd)
            os.close(pidfd)
    deadline = time.monotonic_ns() + timeout_ms * 1_000_000
    while time.monotonic_ns() < deadline:  # kernels before 5.3: 1 ms polling
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        time.sleep(0.001)
    return False


def _kill_everything_else(child_pid: int) -> int:
    """SIGKILL every other process of the jail and reap them: how many were reaped, or -1 if
    some survived the deadline (the supervisor then replaces the jail). As pid 1, kill(-1)
    reaches the whole pid namespace and every process in it descends from us, so ECHILD means
    none is left. Without a pid namespace (the development-only no-jail backend) only the
    child's process group can be reached. Called in the job process (pid 2, a subreaper):
    kill(-1) spares pid 1 and the caller, and every orphan is re-parented to the caller."""
    reaped, deadline = 0, None
    as_init = _IN_PID_NAMESPACE
    while True:
        try:
            if as_init:
                os.kill(-1, signal.SIGKILL)
            else:
                os.killpg(child_pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
            continue
        deadline = deadline or time.monotonic() + CLEANUP_DEADLINE_S
        if time.monotonic() >= deadline:
            return -1
        time.sleep(0.0005)


def _remove_tree_contents(path: str) -> None:
    for entry in os.scandir(path):
        if entry.is_dir(follow_symlinks=False):
            with contextlib.suppress(OSError):
                os.chmod(entry.path, 0o700)
            _remove_tree_contents(entry.path)
            os.rmdir(entry.path)
        else:
            os.unlink(entry.path)


def _clean_scratch(job: _Job) -> bool:
    """Empty the scratch directories (as the program uid, which owns what is in them)."""
    dirty = [d for d, empty_size in job.scratch
             if (os.listdir(d) if empty_size is None else os.stat(d).st_size != empty_size)]
    if not dirty:
        return True
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            if job.child_uid is not None:
                os.setresgid(job.child_gid, job.child_gid, job.child_gid)
                os.setresuid(job.child_uid, job.child_uid, job.child_uid)
            for path in dirty:
                _remove_tree_contents(path)
            status = 0
        finally:
            os._exit(status)
    exited = _wait_exit(pid, int(CLEANUP_DEADLINE_S * 1000), job.poller)
    if not exited:
        os.kill(pid, signal.SIGKILL)
    return exited and os.waitpid(pid, 0)[1] == 0


def run_test(job: _Job, test_id: int, size: int, pump: _Pump) -> None:
    """Run the loaded program once on the `size`-byte input waiting on the channel, and send
    the result frame. The input goes from the channel into the child's stdin memfd and the
    outputs from their memfds into the channel, never through this process's memory."""
    fds = (os.memfd_create("stdin", os.MFD_CLOEXEC), os.memfd_create("stdout", os.MFD_CLOEXEC),
           os.memfd_create("stderr", os.MFD_CLOEXEC))
    try:
        pump.copy(0, fds[0], size)
        os.lseek(fds[0], 0, os.SEEK_SET)
        header, spans = _run_child(job, test_id, fds)
        _write_frame_header(1, header, [count for _, _, count in spans])
        for fd, offset, count in spans:
            pump.copy(fd, 1, count, offset)
    finally:
        for fd in fds:
            os.close(fd)


def _run_child(job: _Job, test_id: int, fds: tuple[int, int, int],
               ) -> tuple[dict, tuple[tuple[int, int, int], ...]]:
    """Fork, time and reap one child: the result header and the (fd, offset, size) spans of
    its stdout (up to the output cap) and stderr (its tail)."""
    _, out_fd, err_fd = fds
    # The program's __main__, made and installed here so that the child need not.
    module = types.ModuleType("__main__")
    module.__file__, module.__builtins__ = "main.py", builtins
    sys.modules["__main__"] = module
    t0 = time.monotonic_ns()
    pid = os.fork()
    if pid == 0:
        _child_main(job, fds, module)
    exited = _wait_exit(pid, job.time_ms, job.poller)
    # The end of the window, read before the reap, the leftover kill and the scratch clean-up:
    # their cost grows with what the program leaves behind, and is the harness's work.
    t1 = time.monotonic_ns()
    if not exited:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1 if _IN_PID_NAMESPACE else pid, signal.SIGKILL)
    _, wait_status, rusage = os.wait4(pid, 0)
    leftovers = _kill_everything_else(pid)
    try:
        setup_report = os.read(job.setup_r, 4096)
    except BlockingIOError:  # the child died before its setup finished
        setup_report = b""
    cleanup_ok = _clean_scratch(job)
    if setup_report[:1] == b"I":
        return {"type": "result", "id": test_id,
                "input_error": setup_report[1:].decode("utf-8", "replace"),
                "leftover_processes": leftovers, "cleanup_ok": cleanup_ok}, ()
    setup_ok = setup_report[:1] == b"1" and len(setup_report) == 1 + _PARSE_REPORT.size
    parse_ns, parse_cpu_ns = _PARSE_REPORT.unpack(setup_report[1:]) if setup_ok else (0, 0)
    # CPU time of the whole child, as the kernel's RLIMIT_CPU counts it.
    child_cpu_ns = round((rusage.ru_utime + rusage.ru_stime) * 1e9)
    stdout_size, stderr_size = os.fstat(out_fd).st_size, os.fstat(err_fd).st_size
    stderr_tail = min(stderr_size, STDERR_TAIL_BYTES)
    spans = ((out_fd, 0, min(stdout_size, job.output_bytes)),
             (err_fd, stderr_size - stderr_tail, stderr_tail))
    return {
        "type": "result", "id": test_id,
        "duration_s": (max(0, t1 - t0 - parse_ns) + job.charge_ns) / 1e9,
        "cpu_s": (max(0, child_cpu_ns - parse_cpu_ns) + job.charge_cpu_ns) / 1e9,
        "parse_s": parse_ns / 1e9, "parse_cpu_s": parse_cpu_ns / 1e9,
        "compile_charge_s": job.charge_ns / 1e9, "child_cpu_s": child_cpu_ns / 1e9,
        "max_rss_kb": rusage.ru_maxrss,
        "exit_code": os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None,
        "signal": os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None,
        "timed_out": not exited, "stdout_size": stdout_size, "stderr_size": stderr_size,
        "setup_ok": setup_ok,
        "setup_error": "" if setup_ok else setup_report[1:].decode("utf-8", "replace"),
        "leftover_processes": leftovers, "cleanup_ok": cleanup_ok,
    }, spans


# --- main loop ------------------------------------------------------------------------------


def _load(header: dict, source: bytes, seccomp_filter: bytes) -> tuple[dict, _Job]:
    """Compile a program and arm the job process for it; the "compiled" reply and the job."""
    import linecache

    child_uid = header.get("child_uid")
    # Program code must never run with a capability: either we hold none, or the child's
    # switch from uid 0 to a non-zero uid makes the kernel clear them (unless securebits say
    # otherwise).
    clears = (os.getuid() == 0 and child_uid not in (None, 0)
              and not _prctl(PR_GET_SECUREBITS) & SECBIT_KEEP_CAPS_OR_NO_SETUID_FIXUP)
    if _cap_eff() != 0 and not clears:
        return {"ok": False, "infra": True, "error": "a child would keep capabilities"}, None
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    if child_uid is not None and os.getgroups():
        with contextlib.suppress(PermissionError):  # bwrap's user namespace denies it
            os.setgroups([])
        if os.getgroups():
            return {"ok": False, "infra": True, "error": "supplementary groups remain"}, None
    os.chdir(header["work_dir"])
    for limit, value in ((resource.RLIMIT_NOFILE, CHILD_NOFILE), (resource.RLIMIT_CORE, 0),
                         (resource.RLIMIT_NPROC, CHILD_NPROC)):
        resource.setrlimit(limit, (value, value))
    if header.get("cpus"):  # the slot's cpuset pins too, where the host allows it
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, header["cpus"])
    if seccomp_filter:  # after sched_setaffinity, which the filter refuses
        _install_seccomp(seccomp_filter)
    try:
        text = source.decode("utf-8")
        start, start_cpu = time.monotonic_ns(), time.process_time_ns()
        code = compile(text, "main.py", "exec", dont_inherit=True)
        compile_ns = time.monotonic_ns() - start
        compile_cpu_ns = time.process_time_ns() - start_cpu
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        return {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, None
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    job = _Job(header, code, compile_cpu_ns)
    return {"ok": True, "seccomp": bool(seccomp_filter), "compile_s": compile_ns / 1e9,
            "compile_charge_s": job.charge_ns / 1e9}, job


# What the harness process started with stays referenced for its whole life: each job installs
# its streams in sys (`_Job.install_streams`) and each test its own __main__ (`run_test`).
_HARNESS_ORIGINALS = (sys.modules.get("__main__"), sys.stdin, sys.stdout, sys.stderr)
_IN_PID_NAMESPACE = False  # set in main(): pid 1 of the jail's pid namespace


def _job_main(header: dict, handback: int) -> int:
    """The job process: load one program, then run its tests until a frame that is not a
    test arrives; that frame's header goes back to pid 1 over `handback`."""
    _prctl(PR_SET_CHILD_SUBREAPER, 1)  # orphans of the program come to us to be reaped
    payloads = [read_exact(0, n) for n in header.get("payload_sizes", [])]
    reply, job = _load(header, payloads[0], payloads[1] if len(payloads) > 1 else b"")
    del payloads
    if job is not None:
        job.install_streams()
    # Children need not scan (and copy-on-write) the harness's objects; what pid 1 made is
    # frozen already (main), so this collects only the job's own objects.
    gc.collect()
    gc.freeze()
    write_all(1, encode_frame(dict(reply, type="compiled")))
    pump = _Pump()
    while True:
        raw = _read_header_bytes(0)
        if not raw:
            return 0
        frame = json.loads(raw)
        if frame.get("type") != "run" or job is None:
            write_all(handback, raw)
            return 0
        sizes = frame.get("payload_sizes") or [0]
        run_test(job, int(frame["id"]), int(sizes[0]), pump)


def _serve_job(header: dict) -> dict | None:
    """Fork the job process for one program and wait for it to finish; the header of the
    frame it stopped at, or None at the end of the channel."""
    handback_r, handback_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            os.close(handback_r)
            status = _job_main(header, handback_w)
        finally:
            os._exit(status)
    os.close(handback_w)
    chunks = []
    while chunk := os.read(handback_r, 1 << 16):
        chunks.append(chunk)
    os.close(handback_r)
    _, status = os.waitpid(pid, 0)
    if _IN_PID_NAMESPACE:  # whatever it left (it did not end cleanly) goes with it
        _kill_everything_else(pid)
    if status != 0:
        raise RuntimeError(f"job process ended with wait status {status}")
    return json.loads(b"".join(chunks)) if chunks else None


def main() -> int:
    """pid 1 of the jail. It never reads a program, a test input or an output: each program
    runs in a job process forked from this clean state (`_serve_job`), so nothing one job
    held (its source, a checker's expected outputs) is in the next job's address space."""
    global _IN_PID_NAMESPACE
    _pin_layout()
    _IN_PID_NAMESPACE = os.getpid() == 1
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 with default handlers ignores them
    _prctl(PR_SET_DUMPABLE, 0)
    # The OOM killer should pick this jail, not the host; children inherit the score.
    with contextlib.suppress(OSError), open("/proc/self/oom_score_adj", "w") as adj:
        adj.write("1000")
    for name in PRELOAD_MODULES:
        __import__(name)
    # Frozen here, once: a job process's gc.collect() then scans only what its job made,
    # instead of writing to (and so copying, page by page, from this process) the whole heap.
    gc.collect()
    gc.freeze()
    write_all(1, encode_frame({"type": "hello", "version": PROTOCOL_VERSION,
                               "pid": os.getpid(), "uid": os.getuid(),
                               "hash_seed_fixed": sys.flags.hash_randomization == 0}))
    header = None
    while True:
        if header is None:
            raw = _read_header_bytes(0)
            if not raw:
                return 0
            header = json.loads(raw)
        kind = header.get("type")
        if kind == "job":
            header = _serve_job(header)
            if header is None:
                return 0
        elif kind == "end":
            return 0
        else:
            raise ValueError(f"unexpected {kind!r} frame (no program loaded)")


if __name__ == "__main__":
    sys.exit(main())
