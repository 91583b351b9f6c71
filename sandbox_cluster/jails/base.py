"""The parts every jail backend shares: the jail's envelope and placement, the started jail
process, the backend base class, uid blocks and the environment the harness sees (see the
package docstring for what a jail is)."""


from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import signal
import stat
import subprocess
import sys
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from sandbox_cluster import harness
from sandbox_cluster.jails.cgroups import SlotCgroup

log = logging.getLogger(__name__)

HARNESS_SOURCE = Path(harness.__file__).read_text()
RUNTIME_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32")
JAIL_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8",
            "HOME": "/tmp", "PYTHONHASHSEED": "0"}
DEFAULT_UID_BASE = 200_000
UID_BLOCK = 512  # outside uids per backend: two per slot
UID_BLOCKS = 1024
UID_LOCK_DIR = Path("/run/sandbox_cluster/uids")
CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL")


class JailUnavailable(RuntimeError):
    """The backend cannot run on this host (binary missing, namespaces refused, ...)."""


class JailStartError(RuntimeError):
    """A jail failed to start: an infrastructure failure, never a program verdict."""


@dataclass(frozen=True)
class JailEnvelope:
    """Limits of the jail as a whole (harness + program + its children). The harness sets the
    per-test limits from `Limits` on each program child, below these hard caps.

    `lifetime_s` bounds how long one jail may exist (a started spare waits for its job, and one
    job may run many tests); the supervisor's per-test watchdog is the real time limit.
    """

    tmpfs_mb: int = 64
    shm_mb: int = 64
    tmpfs_inodes: int = 4096
    nofile: int = 1024
    nproc: int = 256
    fsize_mb: int = 2048
    stack_mb: int = 8
    memlock_kb: int = 64
    lifetime_s: int = 6 * 3600


@dataclass(frozen=True)
class Placement:
    """Where a jail runs: its slot (which selects the outside uids), cores and cgroups."""

    slot: int
    cpus: tuple[int, ...]
    cgroup: SlotCgroup | None = None


class JailProcess:
    """A started jail: the harness's channel fds and how to end it."""

    def __init__(self, popen: subprocess.Popen, cgroup: SlotCgroup | None) -> None:
        self.popen = popen
        self.cgroup = cgroup
        self.to_harness = popen.stdin.fileno()
        self.from_harness = popen.stdout.fileno()
        os.set_blocking(popen.stderr.fileno(), False)
        self._stderr = b""

    def diagnostics(self) -> str:
        """The last lines the jail tool or the harness wrote to stderr (for infra errors)."""
        with contextlib.suppress(OSError, TypeError):
            while chunk := os.read(self.popen.stderr.fileno(), 65536):
                self._stderr = (self._stderr + chunk)[-4096:]
        return self._stderr.decode("utf-8", "replace").strip()

    def alive(self) -> bool:
        return self.popen.poll() is None

    def kill(self) -> None:
        with contextlib.suppress(ProcessLookupError):
            self.popen.send_signal(signal.SIGKILL)
        if self.cgroup is not None:
            self.cgroup.kill_all()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.popen.wait(timeout=5)
        for stream in (self.popen.stdin, self.popen.stdout, self.popen.stderr):
            with contextlib.suppress(OSError):
                stream.close()


def _world_executable(path: str) -> bool:
    """Whether an unprivileged uid can reach and run `path` (every ancestor o+x)."""
    p = Path(path)
    try:
        return bool(p.stat().st_mode & stat.S_IXOTH) and all(
            parent.stat().st_mode & stat.S_IXOTH for parent in p.parents)
    except OSError:
        return False


def default_python() -> str:
    """The interpreter that runs programs: $SANDBOX_CLUSTER_PYTHON, else this interpreter if an
    unprivileged uid can reach it, else the system python3."""
    if env := os.environ.get("SANDBOX_CLUSTER_PYTHON"):
        return env
    exe = os.path.realpath(sys.executable)
    if _world_executable(exe):
        return exe
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or exe


class JailBackend:
    """Base of the jail backends. Subclasses build the command line in `_spawn`."""

    name: ClassVar[str] = ""
    work_dir = "/tmp"
    scratch_dirs: tuple[str, ...] = ("/tmp", "/dev/shm")
    scratch_tmpfs = True  # the jail mounts a fresh tmpfs on each scratch dir

    def __init__(self, python: str | None = None, envelope: JailEnvelope | None = None,
                 uid_base: int | None = None) -> None:
        self.python = os.path.realpath(python or default_python())
        self.envelope = envelope or JailEnvelope()
        self.privileged = os.geteuid() == 0
        self._uid_lock: weakref.finalize | None = None
        self.uid_base = uid_base if uid_base is not None else self._reserve_uid_block()
        self._unavailable: str | bool | None = False  # False: not probed yet

    def _reserve_uid_block(self) -> int:
        """The first uid block no other live process holds (flock; freed at process exit)."""
        if not self.privileged:
            return DEFAULT_UID_BASE
        UID_LOCK_DIR.mkdir(parents=True, exist_ok=True)
        for block in range(UID_BLOCKS):
            fd = os.open(UID_LOCK_DIR / f"{block}.lock", os.O_RDWR | os.O_CREAT, 0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            self._uid_lock = weakref.finalize(self, os.close, fd)
            return DEFAULT_UID_BASE + block * UID_BLOCK
        raise JailUnavailable(f"all {UID_BLOCKS} uid blocks under {UID_LOCK_DIR} are in use")

    def release(self) -> None:
        """Give the uid block back (the pool calls this on close; also done when the backend
        is garbage-collected, and by the kernel when the process exits)."""
        if self._uid_lock is not None:
            self._uid_lock()

    @property
    def uid_separation(self) -> bool:
        return self.privileged

    def child_ids(self) -> tuple[int, int] | None:
        """Inside-jail uid/gid of the program child, None when it shares the harness's."""
        return (1, 1) if self.uid_separation else None

    def outside_uids(self, slot: int) -> tuple[int, int]:
        if not 0 <= 2 * slot + 1 < UID_BLOCK:
            raise ValueError(f"slot {slot} outside the backend's uid block")
        base = self.uid_base + 2 * slot
        return base, base + 1

    def harness_argv(self) -> list[str]:
        # Not -I: the harness needs PYTHONHASHSEED (harness._pin_layout); the jail's whole
        # environment is ours, and -s -P keep user site-packages and the cwd off sys.path.
        return [self.python, "-s", "-P", "-B", "-c", HARNESS_SOURCE]

    def runtime_mounts(self) -> list[tuple[str, str | None]]:
        """(path, symlink target or None for a read-only bind) for the Python runtime."""
        mounts = []
        for path in RUNTIME_DIRS:
            if os.path.islink(path):
                mounts.append((path, os.readlink(path)))
            elif os.path.isdir(path):
                mounts.append((path, None))
        prefix = os.path.dirname(os.path.dirname(self.python))
        if not any(prefix == d or prefix.startswith(d + "/") for d, _ in mounts):
            mounts.append((prefix, None))
        return mounts

    def _probe(self) -> str | None:
        """Why this backend cannot work here, from what can be checked without starting a jail
        (binaries, the interpreter); None when nothing is known to be wrong. Starting one is
        `jails.unavailable_reason`'s second step."""
        if not _world_executable(self.python) and self.name != "nojail":
            return (f"interpreter {self.python} is not reachable by an unprivileged uid; "
                    "pass python=/usr/bin/python3 or set SANDBOX_CLUSTER_PYTHON")
        return None

    def spawn(self, placement: Placement) -> JailProcess:
        """Start a jail running the harness (the hello frame is read by the session)."""
        raise NotImplementedError

    def _popen(self, argv: list[str], **kwargs) -> subprocess.Popen:
        try:
            kwargs.setdefault("env", {})
            return subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, bufsize=0, close_fds=True,
                                    **kwargs)
        except OSError as exc:
            raise JailStartError(f"{self.name}: cannot start {argv[0]}: {exc}") from exc
