"""The warm fork-server that runs INSIDE a jail and times each test of one program.

Started by a jail backend as `python -I -B -c <this file's source>`; standard library only, no
package imports, so it starts in a few tens of milliseconds. The supervisor (`jails.session`)
drives it over the harness's own stdin/stdout with length-prefixed frames:

    harness  -> hello    {pid, uid, features}
    supervisor -> job    {interface, limits, child uid/gid, ...} + [source, seccomp filter]
    harness  -> compiled {ok, error}
    supervisor -> run    {id} + [test input]            (repeated, one test at a time)
    harness  -> result   {id, duration_s, cpu_s, exit_code, signal, ...} + [stdout, stderr tail]

For each test the harness forks a fresh child from the warm interpreter (the program is compiled
once), so no module, global, cache or file state carries from one test to the next. The child
gets a memfd holding the test input as stdin and memfds as stdout/stderr (no reader competes
with the program for its pinned core, and a pipe can never deadlock on a huge input), drops to
the program uid, applies rlimits and the seccomp filter, and runs the program. The harness
meanwhile sleeps in poll() on a pidfd. Duration is CLOCK_MONOTONIC from just before fork() to
the child's exit; CPU time comes from wait4's rusage. Nothing the program does can move either
clock: both are read by this process, which the program can neither signal, trace nor write to.

Threat model (what the child can and cannot do), in order of the defences:
- Results travel only over fds 0/1 of this process. The child replaces fds 0-2 with its memfds
  and closes every other fd before running a line of program code, so it never holds the
  channel; the program's stdout is data, never parsed as a frame.
- The child runs under a different uid than this process (uid separation, when the jail maps
  two uids), with no capabilities and PR_SET_NO_NEW_PRIVS: it cannot signal, ptrace or open
  /proc/1/fd of the harness. This process is PR_SET_DUMPABLE 0 (ptrace and /proc/<pid>/fd,
  mem, environ are refused even to a same-uid process) and is pid 1 of the jail's pid
  namespace: SIGKILL/SIGSTOP from inside the namespace are ignored by the kernel, and it
  installs no handler for any other signal (SIGINT is reset to the default).
- The seccomp filter (built by `jails.seccomp`) refuses ptrace, process_vm_*, pidfd_getfd,
  namespace creation, mounts, sched_setaffinity (escaping the pinned core), prlimit on other
  processes and other kernel attack surface.
- Hard rlimits set before the uid drop cannot be raised (no CAP_SYS_RESOURCE).
- After the child exits the harness SIGKILLs every other process of the pid namespace
  (kill(-1) from pid 1) and reaps them, and wipes the scratch directories with a helper running
  as the program uid, so a test cannot leave a process or a file behind for the next test.
- Expected outputs never enter the jail; checking happens outside (or in a separate checker
  jail), so a program cannot read another test's answer from the harness's memory.
If the program nevertheless kills or wedges this process, the supervisor scores the test in
flight as a program failure (runtime_error), never as an infra error.
"""

from __future__ import annotations

import contextlib
import gc
import json
import os
import select
import signal
import struct
import sys
import time

PROTOCOL_VERSION = 1
FRAME_HEADER = struct.Struct(">I")
MAX_HEADER_BYTES = 1 << 20
MiB = 1 << 20

# Exit status of a child whose setup (before any program code) failed: told apart from a
# program's own exit code by the setup pipe, which only harness code in the child writes to.
SETUP_FAILED_EXIT = 121
# Child-side resource caps that do not come from `Limits` (documented in the README).
CHILD_NOFILE = 256
CHILD_NPROC = 64
STDERR_TAIL_BYTES = 8192
CLEANUP_DEADLINE_S = 2.0
# Imported once in the warm harness so that a program's `import math` costs the same for every
# program and test, and is not part of the measured duration.
PRELOAD_MODULES = (
    "array", "bisect", "collections", "copy", "functools", "heapq", "io", "itertools", "math",
    "operator", "random", "re", "string", "threading", "traceback", "typing",
)

PR_SET_DUMPABLE = 4
PR_SET_NO_NEW_PRIVS = 38
PR_SET_SECCOMP = 22
SECCOMP_MODE_FILTER = 2


# --- framing (also imported by the supervisor) --------------------------------------------


def encode_frame(header: dict, payloads: tuple[bytes, ...] = ()) -> bytes:
    """One frame: 4-byte big-endian header length, JSON header, then the raw payloads whose
    sizes the header lists under "payload_sizes"."""
    header = dict(header, payload_sizes=[len(p) for p in payloads])
    data = json.dumps(header, separators=(",", ":")).encode()
    return b"".join((FRAME_HEADER.pack(len(data)), data, *payloads))


def write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def read_exact(fd: int, size: int) -> bytes:
    """Blocking read of exactly `size` bytes; EOFError on a closed channel."""
    chunks, remaining = [], size
    while remaining:
        chunk = os.read(fd, min(remaining, 1 << 20))
        if not chunk:
            raise EOFError(f"channel closed with {remaining} of {size} bytes unread")
        chunks.append(chunk)
        remaining -= len(chunk)
    return b"".join(chunks)


def read_frame(fd: int) -> tuple[dict, list[bytes]]:
    (size,) = FRAME_HEADER.unpack(read_exact(fd, FRAME_HEADER.size))
    if size > MAX_HEADER_BYTES:
        raise ValueError(f"frame header of {size} bytes exceeds {MAX_HEADER_BYTES}")
    header = json.loads(read_exact(fd, size))
    payloads = [read_exact(fd, n) for n in header.get("payload_sizes", [])]
    return header, payloads


# --- process hardening ----------------------------------------------------------------------


def _libc():
    import ctypes

    return ctypes.CDLL(None, use_errno=True)


def _prctl(libc, option: int, arg2: int | object = 0) -> None:
    import ctypes

    if libc.prctl(option, arg2, 0, 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"prctl({option}) failed: {os.strerror(err)}")


def install_seccomp(libc, filter_bytes: bytes) -> None:
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
    prog = SockFprog(len(filter_bytes) // 8, ctypes.addressof(buffer))
    if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.byref(prog), 0, 0) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"seccomp filter rejected: {os.strerror(err)}")


def _cap_eff() -> int:
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    return -1


class _Job:
    """The job header as attributes, plus the compiled program and prepared seccomp program."""

    def __init__(self, header: dict, code, seccomp) -> None:
        self.interface = header["interface"]  # "stdio" | "function" | "checker"
        self.entry = header.get("entry") or ("check" if self.interface == "checker" else "solve")
        self.time_ns = int(header["time_s"] * 1e9)
        self.memory_bytes = int(header["memory_mb"]) * MiB
        self.output_bytes = int(header["output_mb"]) * MiB
        self.child_uid = header.get("child_uid")
        self.child_gid = header.get("child_gid")
        self.work_dir = header["work_dir"]
        self.scratch_dirs = list(header.get("scratch_dirs") or [self.work_dir])
        self.nofile = int(header.get("nofile", CHILD_NOFILE))
        self.nproc = int(header.get("nproc", CHILD_NPROC))
        self.code = code
        self.seccomp = seccomp


class _PreparedSeccomp:
    """A sock_fprog built once in the harness, so the child only makes the prctl call."""

    def __init__(self, filter_bytes: bytes) -> None:
        import ctypes

        class SockFprog(ctypes.Structure):
            _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

        self.buffer = ctypes.create_string_buffer(filter_bytes, len(filter_bytes))
        self.prog = SockFprog(len(filter_bytes) // 8, ctypes.addressof(self.buffer))
        self.prog_ref = ctypes.byref(self.prog)

    def install(self, libc) -> None:
        import ctypes

        if libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, self.prog_ref, 0, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, f"seccomp filter rejected: {os.strerror(err)}")


# --- the child: setup, then the program -----------------------------------------------------


def _drop_privileges(job: _Job) -> None:
    if job.child_uid is not None:
        try:
            os.setgroups([])
        except PermissionError:  # setgroups denied by the jail's user namespace
            if os.getgroups():
                raise
        os.setresgid(job.child_gid, job.child_gid, job.child_gid)
        os.setresuid(job.child_uid, job.child_uid, job.child_uid)
        if os.getuid() != job.child_uid:
            raise RuntimeError(f"uid drop to {job.child_uid} did not take effect")
    _prctl(_LIBC, PR_SET_NO_NEW_PRIVS, 1)
    if _cap_eff() != 0:
        raise RuntimeError("program would run with capabilities; refusing")


def _bind_std_streams(job: _Job) -> None:
    import io

    # Same shape as CPython's own streams under a UTF-8 locale; stdout is block-buffered.
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(
        io.BufferedReader(io.FileIO(0, "r")), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BufferedWriter(io.FileIO(2, "w")), encoding="utf-8",
                           errors="backslashreplace", line_buffering=True)
    sys.stderr = sys.__stderr__ = err
    if job.interface == "stdio":
        sys.stdout = io.TextIOWrapper(io.BufferedWriter(io.FileIO(1, "w")), encoding="utf-8",
                                      errors="strict")
    else:  # function/checker programs return their answer; their prints go to stderr
        sys.stdout = err
    sys.__stdout__ = sys.stdout


def _set_child_rlimits(job: _Job) -> None:
    import resource

    cpu_s = -(-job.time_ns // 1_000_000_000) + 1
    resource.setrlimit(resource.RLIMIT_CPU, (cpu_s, cpu_s + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (job.output_bytes, job.output_bytes))
    resource.setrlimit(resource.RLIMIT_NOFILE, (job.nofile, job.nofile))
    resource.setrlimit(resource.RLIMIT_NPROC, (job.nproc, job.nproc))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Last: once the address space is capped even our own setup could fail to allocate.
    resource.setrlimit(resource.RLIMIT_AS, (job.memory_bytes, job.memory_bytes))


def _child_setup(job: _Job, fds: tuple[int, int, int], setup_w: int) -> None:
    os.setsid()
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
    if setup_w != 3:
        os.dup2(setup_w, 3)
    os.closerange(4, 1 << 20)
    try:  # the kernel's OOM killer should pick the program, never the harness
        with open("/proc/self/oom_score_adj", "w") as adj:
            adj.write("1000")
    except OSError:
        pass
    os.chdir(job.work_dir)
    _drop_privileges(job)
    _bind_std_streams(job)
    if job.seccomp is not None:
        job.seccomp.install(_LIBC)
    _set_child_rlimits(job)


def _exit_status(code) -> int:
    """CPython's mapping of `SystemExit.code` to a process exit status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
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


def _run_program(job: _Job, args: dict | None) -> int:
    import builtins
    import types

    module = types.ModuleType("__main__")
    module.__file__ = "main.py"
    module.__builtins__ = builtins
    sys.modules["__main__"] = module
    sys.argv = ["main.py"]
    sys.modules["random"].seed()  # the warm harness's state must not fix the program's randomness
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
                tb = tb.tb_next  # the harness's own frames are not the program's business
            traceback.print_exception(type(exc), exc, tb)
        except BaseException:
            os.write(2, f"\n{type(exc).__name__}\n".encode())
    try:  # what CPython does at interpreter exit: join non-daemon threads, run atexit hooks
        sys.modules["threading"]._shutdown()
        import atexit

        atexit._run_exitfuncs()
    except BaseException:
        pass
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            status = status or 120  # CPython's status when flushing stdout fails at exit
    if answer is not None and status == 0:
        try:
            write_all(1, answer)
        except OSError:
            status = 120
    return status


def _child_main(job: _Job, fds: tuple[int, int, int], setup_w: int, args: dict | None):
    try:
        _child_setup(job, fds, setup_w)
    except BaseException as exc:
        try:
            os.write(3, b"0" + f"{type(exc).__name__}: {exc}".encode()[:2000])
        finally:
            os._exit(SETUP_FAILED_EXIT)
    os.write(3, b"1")
    os.close(3)
    os._exit(_run_program(job, args))


# --- the harness side of one test -----------------------------------------------------------


def _wait_exit(pid: int, timeout_ns: int) -> bool:
    """Sleep until `pid` exits or the timeout passes; True if it exited. No signal handler is
    involved (pid 1 must not install one); the child stays a zombie for wait4."""
    deadline = time.monotonic_ns() + timeout_ns
    if hasattr(os, "pidfd_open"):
        pidfd = os.pidfd_open(pid)
        try:
            poller = select.poll()
            poller.register(pidfd, select.POLLIN)
            remaining_ms = max(0, -(-(deadline - time.monotonic_ns()) // 1_000_000))
            return bool(poller.poll(remaining_ms))
        finally:
            os.close(pidfd)
    while time.monotonic_ns() < deadline:  # kernels before 5.3: 1 ms polling
        if os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None:
            return True
        time.sleep(0.001)
    return False


def _kill_everything_else(child_pid: int) -> int:
    """SIGKILL every process of the jail but this one and reap them: how many were reaped, or
    -1 if some survived the deadline (the supervisor then replaces the jail). As pid 1,
    kill(-1) reaches the whole pid namespace, and every process in it descends from us, so
    ECHILD means none is left. Outside a pid namespace (the development-only no-jail backend)
    only the child's process group can be reached."""
    reaped = 0
    deadline = time.monotonic() + CLEANUP_DEADLINE_S
    while time.monotonic() < deadline:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1, signal.SIGKILL) if os.getpid() == 1 else os.killpg(child_pid, 9)
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return reaped
        if pid:
            reaped += 1
        else:
            time.sleep(0.0005)
    return -1


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
    dirty = [d for d in job.scratch_dirs if os.path.isdir(d) and os.listdir(d)]
    if not dirty:
        return True
    pid = os.fork()
    if pid == 0:
        try:
            if job.child_uid is not None:
                os.setresgid(job.child_gid, job.child_gid, job.child_gid)
                os.setresuid(job.child_uid, job.child_uid, job.child_uid)
            for path in dirty:
                _remove_tree_contents(path)
            os._exit(0)
        except BaseException:
            os._exit(1)
    exited = _wait_exit(pid, int(CLEANUP_DEADLINE_S * 1e9))
    if not exited:
        os.kill(pid, signal.SIGKILL)
    _, status = os.waitpid(pid, 0)
    return exited and status == 0


def _read_outputs(job: _Job, out_fd: int, err_fd: int) -> tuple[int, int, bytes, bytes]:
    stdout_size = os.fstat(out_fd).st_size
    stdout = os.pread(out_fd, min(stdout_size, job.output_bytes), 0) if stdout_size else b""
    stderr_size = os.fstat(err_fd).st_size
    start = max(0, stderr_size - STDERR_TAIL_BYTES)
    stderr = os.pread(err_fd, stderr_size - start, start) if stderr_size else b""
    return stdout_size, stderr_size, stdout, stderr


def run_test(job: _Job, test_id: int, data: bytes) -> tuple[dict, tuple[bytes, ...]]:
    """Run the compiled program once on one test input; the result frame's header+payloads."""
    args = None
    if job.interface != "stdio":
        try:
            args = json.loads(data)
            if not isinstance(args, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            return {"type": "result", "id": test_id, "input_error": str(exc)}, ()
    in_fd = os.memfd_create("stdin", os.MFD_CLOEXEC)
    write_all(in_fd, data)
    os.lseek(in_fd, 0, os.SEEK_SET)
    out_fd = os.memfd_create("stdout", os.MFD_CLOEXEC)
    err_fd = os.memfd_create("stderr", os.MFD_CLOEXEC)
    setup_r, setup_w = os.pipe()
    del data
    t0 = time.monotonic_ns()
    pid = os.fork()
    if pid == 0:
        _child_main(job, (in_fd, out_fd, err_fd), setup_w, args)
    os.close(setup_w)
    exited = _wait_exit(pid, job.time_ns)
    t1 = time.monotonic_ns()
    if not exited:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(-1 if os.getpid() == 1 else pid, signal.SIGKILL)
    _, wait_status, rusage = os.wait4(pid, 0)
    leftovers = _kill_everything_else(pid)
    setup_report = os.read(setup_r, 4096)
    os.close(setup_r)
    stdout_size, stderr_size, stdout, stderr = _read_outputs(job, out_fd, err_fd)
    for fd in (in_fd, out_fd, err_fd):
        os.close(fd)
    header = {
        "type": "result",
        "id": test_id,
        "duration_s": (t1 - t0) / 1e9,
        "cpu_s": rusage.ru_utime + rusage.ru_stime,
        "max_rss_kb": rusage.ru_maxrss,
        "exit_code": os.WEXITSTATUS(wait_status) if os.WIFEXITED(wait_status) else None,
        "signal": os.WTERMSIG(wait_status) if os.WIFSIGNALED(wait_status) else None,
        "timed_out": not exited,
        "stdout_size": stdout_size,
        "stderr_size": stderr_size,
        "setup_ok": setup_report[:1] == b"1",
        "setup_error": setup_report[1:].decode("utf-8", "replace") if setup_report else "",
        "leftover_processes": leftovers,
        "cleanup_ok": _clean_scratch(job),
    }
    return header, (stdout, stderr)


# --- main loop ------------------------------------------------------------------------------


def _compile(source: bytes):
    import linecache

    try:
        text = source.decode("utf-8")
        code = compile(text, "main.py", "exec", dont_inherit=True)
    except (SyntaxError, ValueError, OverflowError, MemoryError, RecursionError) as exc:
        return None, f"{type(exc).__name__}: {exc}"
    linecache.cache["main.py"] = (len(text), None, text.splitlines(True), "main.py")
    return code, ""


def main() -> int:
    global _LIBC
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pid 1 with default handlers ignores them
    _LIBC = _libc()
    _prctl(_LIBC, PR_SET_DUMPABLE, 0)
    for name in PRELOAD_MODULES:
        __import__(name)
    chan_in, chan_out = 0, 1
    hello = {"type": "hello", "version": PROTOCOL_VERSION, "pid": os.getpid(),
             "uid": os.getuid(), "pidfd": hasattr(os, "pidfd_open"),
             "python": sys.version.split()[0]}
    write_all(chan_out, encode_frame(hello))
    try:
        header, payloads = read_frame(chan_in)
    except EOFError:
        return 0
    if header.get("type") != "job":
        raise ValueError(f"expected a job frame, got {header.get('type')!r}")
    code, error = _compile(payloads[0])
    seccomp = _PreparedSeccomp(payloads[1]) if len(payloads) > 1 and payloads[1] else None
    write_all(chan_out, encode_frame({"type": "compiled", "ok": code is not None,
                                      "error": error}))
    if code is None:
        return 0
    job = _Job(header, code, seccomp)
    if header.get("cpus"):  # also pinned by the slot's cpuset when the host allows it
        with contextlib.suppress(OSError):
            os.sched_setaffinity(0, header["cpus"])
    gc.collect()
    gc.freeze()  # children need not scan (and copy-on-write) the harness's objects
    while True:
        try:
            header, payloads = read_frame(chan_in)
        except EOFError:
            return 0
        if header.get("type") == "end":
            return 0
        if header.get("type") != "run":
            raise ValueError(f"expected a run frame, got {header.get('type')!r}")
        result, outputs = run_test(job, int(header["id"]), payloads[0])
        write_all(chan_out, encode_frame(result, outputs))


_LIBC = None

if __name__ == "__main__":
    sys.exit(main())
