"""The parts every jail backend shares: the jail's envelope and placement, the started jail
process, the backend base class, uid blocks, the environment the harness sees, and the
filesystem a jail sees: which host trees are bound and which package directories are masked
(see the package docstring for what a jail is)."""


from __future__ import annotations

import contextlib
import fcntl
import functools
import json
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
# The system's program and library trees, bound read-only (the top-level ones are symlinks
# into /usr on a merged-/usr system and are recreated as such). Deliberately not /usr itself:
# /usr/local and /usr/src are where installs and checkouts live (a container image's
# `/usr/src/app`, pip's `/usr/local/lib/python3.X/dist-packages`).
RUNTIME_DIRS = ("/bin", "/sbin", "/lib", "/lib64", "/lib32", "/libx32",
                "/usr/bin", "/usr/sbin", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32",
                "/usr/share")
# Where pip, conda and distributions put installed packages (the project's own, with its data
# set, among them): inside a bound tree each such directory is covered by an empty read-only
# tmpfs, so a jail sees the standard library and no installed package.
SITE_DIR_NAMES = ("site-packages", "dist-packages")
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
        """The last lines the jail tool or the harness wrote to stderr (for infra errors).
        Still answers after `kill`: the pipe is drained into a buffer before it is closed, and
        a closed pipe (ValueError from `fileno`) only means nothing more can arrive."""
        with contextlib.suppress(OSError, TypeError, ValueError):
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
        self.diagnostics()  # keep what the jail said last: an infra error quotes it
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


# Run by the jail's interpreter on the host, in the harness's environment, so it reports the
# paths that same interpreter uses inside the jail. With -S, sys.path is the interpreter's own
# (zip, stdlib, lib-dynload): what `site` and .pth files add (an editable install's checkout,
# say) is never a reason to bind anything.
_LAYOUT_SCRIPT = """
import json, site, sys, sysconfig
prefixes = sorted({sys.prefix, sys.exec_prefix, sys.base_prefix, sys.base_exec_prefix})
paths = sysconfig.get_paths()
print(json.dumps({
    "stdlib": [paths["stdlib"], paths["platstdlib"], sysconfig.get_config_var("LIBDIR") or ""],
    "path": sys.path,
    "site": [*site.getsitepackages(prefixes), paths["purelib"], paths["platlib"]],
}))
"""


@dataclass(frozen=True)
class InterpreterLayout:
    """What the jail's interpreter runs from, as it reports itself: `code` (the executable, a
    venv's pyvenv.cfg, the standard library, lib-dynload and the shared-library directory)
    must be visible in the jail; `site` (every site-packages directory of each of its
    prefixes) must not."""

    code: tuple[str, ...]
    site: tuple[str, ...]


@functools.lru_cache(maxsize=16)
def interpreter_layout(python: str) -> InterpreterLayout:
    """Ask `python` where its standard library and site-packages are (once per interpreter:
    the answer is fixed by its build and pyvenv.cfg). Raises JailStartError when it does not
    answer."""
    argv = [python, "-S", "-s", "-P", "-B", "-c", _LAYOUT_SCRIPT]
    try:
        done = subprocess.run(argv, env=JAIL_ENV, capture_output=True, timeout=60, check=True)
        report = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as exc:
        stderr = getattr(exc, "stderr", b"") or b""
        raise JailStartError(f"interpreter {python} did not report its layout: {exc} "
                             f"{stderr.decode('utf-8', 'replace')[-500:]}") from exc
    site = [path for path in report["site"] if path]
    home = os.path.dirname(python)
    venv_cfg = [os.path.join(d, "pyvenv.cfg") for d in (home, os.path.dirname(home))]
    code = [python, *venv_cfg, *report["stdlib"], *report["path"]]
    return InterpreterLayout(
        code=tuple(p for p in code if p and p not in site and os.path.exists(p)),
        site=tuple(dict.fromkeys(site)))


def _outermost(path: str) -> tuple[int, str]:
    """Sort key: a directory before anything inside it (and a fixed order otherwise)."""
    return len(path), path


def _inside(path: str, trees: list[str]) -> bool:
    return any(path == tree or path.startswith(tree.rstrip("/") + "/") for tree in trees)


def _package_dirs(tree: str) -> list[str]:
    """The site-packages/dist-packages directories at `tree` and one level below it (every
    layout puts them at `<lib>/pythonX.Y/` or `<lib>/python3/`), hidden entries included."""
    found = [os.path.join(tree, name) for name in SITE_DIR_NAMES]
    with contextlib.suppress(OSError), os.scandir(tree) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.is_dir():
                    found += [os.path.join(entry.path, name) for name in SITE_DIR_NAMES]
    return [path for path in found if os.path.isdir(path)]


def mount_parents(mounts: list[tuple[str, str | None]]) -> list[str]:
    """The directories, outermost first, that must exist in a jail's empty root for `mounts`
    (as `JailBackend.runtime_mounts` returns them) and that no bind provides."""
    bound = [path for path, target in mounts if target is None]
    parents: list[str] = []
    for path, _ in mounts:
        for parent in reversed(Path(path).parents[:-1]):  # [:-1]: not "/"
            name = str(parent)
            if not _inside(name, bound) and name not in parents:
                parents.append(name)
    return parents


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
        """(path, symlink target or None for a read-only bind): the system trees of
        RUNTIME_DIRS, then whatever the interpreter runs from outside them (its executable,
        pyvenv.cfg, standard library, shared libraries), each bound by itself, never its whole
        prefix (a venv's src/ of editable checkouts, a prefix's share/ and site-packages stay
        out). Recomputed at each spawn: cheap, and it follows the host's filesystem."""
        mounts: list[tuple[str, str | None]] = []
        trees: list[str] = []
        for path in RUNTIME_DIRS:
            if os.path.islink(path):
                mounts.append((path, os.readlink(path)))
            elif os.path.isdir(path):
                mounts.append((path, None))
                trees.append(path)
        layout = interpreter_layout(self.python)
        for path in sorted({os.path.realpath(p) for p in layout.code}, key=_outermost):
            if not _inside(path, trees):
                mounts.append((path, None))
                trees.append(path)
        return mounts

    def masked_dirs(self) -> list[str]:
        """Every package directory inside a bound tree, outermost first: the interpreter's own
        site-packages and any other Python's under the same trees. Each is mounted over, after
        the binds, by an empty read-only tmpfs, so no installed package (this project's, with
        its data set, included) is visible in the jail whatever the install layout."""
        trees = [path for path, target in self.runtime_mounts() if target is None]
        candidates = set(interpreter_layout(self.python).site)
        for tree in trees:
            if os.path.isdir(tree):
                candidates.update(_package_dirs(tree))
        masks: list[str] = []
        for path in sorted({os.path.realpath(p) for p in candidates if os.path.isdir(p)},
                           key=_outermost):
            if _inside(path, trees) and not _inside(path, masks):
                masks.append(path)
        return masks

    def _probe(self) -> str | None:
        """Why this backend cannot work here, from what can be checked without starting a jail
        (binaries, the interpreter); None when nothing is known to be wrong. Starting one is
        `jails.unavailable_reason`'s second step."""
        if not _world_executable(self.python) and self.name != "nojail":
            return (f"interpreter {self.python} is not reachable by an unprivileged uid; "
                    "pass python=/usr/bin/python3 or set SANDBOX_CLUSTER_PYTHON")
        if self.name != "nojail":
            try:
                interpreter_layout(self.python)
            except JailStartError as exc:
                return str(exc)
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
