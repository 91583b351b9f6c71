"""Per-slot cgroups: memory cap, pids cap and CPU pinning for every process of a jail.

Works with cgroup v1 (one hierarchy per controller under /sys/fs/cgroup/<controller>) and v2
(one unified hierarchy at /sys/fs/cgroup, or at /sys/fs/cgroup/unified in hybrid setups when
it has controllers), whichever the host mounts with write access. Each pool gets its own
directory, `sandbox_cluster/p<pid>-<n>/`, with one child group per slot; a jail is attached to
its slot's group before the harness starts, so the program and everything it forks inherit it.

What each controller gives:
- memory: the whole jail (harness, program, its children, its tmpfs files and output memfds) is
  capped, so a fork bomb of 1 GB processes cannot take the host; the group's oom_kill counter
  tells the supervisor that a SIGKILL was the OOM killer (status memory_limit).
- pids: a cap on tasks (processes + threads) on top of RLIMIT_NPROC.
- cpuset: the slot's cores, which the program cannot leave (sched_setaffinity is also refused by
  seccomp, but without a cpuset the harness itself could drift).
- cpuacct (v1; v2 counts CPU in every group): the slot's CPU time, for stats and benchmarks
  (`SlotCgroup.cpu_usage_ns`); missing, it is simply not reported.

A controller that is missing or not writable is a *degraded feature*: `CgroupTree.degraded`
names it with the reason, the pool logs it once and reports it in `stats()` (and so in
/health). Jails still run, limited by rlimits and sched_setaffinity only.

Leftovers. A pool that dies without `remove()` leaves its directory behind. Directories of
pools whose pid is gone are removed when empty (`_sweep_stale`). A directory with this pool's
own name is a different case: it was made by an earlier process that had this pid (a pool
running as pid 1 of a container that crashed and restarted leaves `p1-0`, which the next one
wants), and taking it over by failing to create it would run every jail without limits. So it
is reclaimed first (`_reclaim`): the processes still in it that this process can see were
left by that earlier pool (the pid is ours now, so it is dead) and are killed; then the groups
are removed. A group holding processes this process cannot see (listed as pid 0, or
populated with none listed: they live in another pid namespace, where a pool with the same pid
may be alive, e.g. two containers sharing the host's cgroup tree), or one that will not go,
raises `CgroupConflict` naming it: the pool refuses to start rather than run without limits.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
CONTROLLERS = ("memory", "pids", "cpuset")
# Accounting only (cgroup v1; v2 accounts CPU in every group): never a degraded feature.
ACCOUNTING = ("cpuacct",)
_pool_counter = itertools.count()


# How long killed leftovers get to exit before their group counts as one that will not go.
RECLAIM_WAIT_S = 5.0


class CgroupConflict(RuntimeError):
    """This pool's cgroup directory is left over and cannot be reclaimed (see the module
    docstring): the pool refuses to start rather than run its jails without limits."""


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def _read(path: Path) -> str:
    with open(path) as f:
        return f.read()


def _unified_root(root: Path) -> Path | None:
    """The v2 hierarchy if it offers any controller we use (a hybrid host may mount one with
    only, say, hugetlb: then v1 is the one to use)."""
    for candidate in (root, root / "unified"):
        controllers = candidate / "cgroup.controllers"
        if controllers.is_file() and set(_read(controllers).split()) & set(CONTROLLERS):
            return candidate
    return None


def _owner_alive(name: str) -> bool:
    """Directories are named p<pid>-<n>: a pool whose process is gone left them behind."""
    try:
        return Path(f"/proc/{int(name[1:].split('-')[0])}").exists()
    except ValueError:
        return True


@dataclass
class SlotCgroup:
    """The groups (one per controller on v1, one on v2) of one slot."""

    version: int
    paths: dict[str, Path]  # controller -> group directory ("unified" on v2)
    procs_files: list[Path] = field(default_factory=list)
    enabled: frozenset[str] = frozenset()  # controllers usable in this group
    _fds: dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def _read_counter(self, name: str, path: Callable[[], Path | None]) -> str | None:
        """A statistics file read through an fd kept open (pread at 0 renders it afresh): the
        supervisor reads the OOM counter once per test, ~1 us instead of ~10 us to open it
        (and ~40 us to build its Path). None if the group has no such file."""
        fd = self._fds.get(name)
        if fd is None:
            where = path()
            if where is None:
                return None
            opened = os.open(where, os.O_RDONLY | os.O_CLOEXEC)
            fd = self._fds.setdefault(name, opened)  # (stats() may race the slot's thread)
            if fd != opened:
                os.close(opened)
        return os.pread(fd, 65536, 0).decode()

    def close_files(self) -> None:
        for fd in self._fds.values():
            with contextlib.suppress(OSError):
                os.close(fd)
        self._fds.clear()

    def _file(self, controller: str, v1_name: str, v2_name: str) -> Path | None:
        key = "unified" if self.version == 2 else controller
        if key not in self.paths or (self.version == 2 and controller not in self.enabled):
            return None
        return self.paths[key] / (v2_name if self.version == 2 else v1_name)

    def set_memory_limit(self, limit_bytes: int) -> None:
        path = self._file("memory", "memory.limit_in_bytes", "memory.max")
        if path is None:
            return
        if self.version == 2:
            _write(path, str(limit_bytes))
            with contextlib.suppress(OSError):
                _write(path.parent / "memory.swap.max", "0")
            return
        memsw = path.parent / "memory.memsw.limit_in_bytes"
        # memsw must stay >= the memory limit: the order of the two writes depends on the
        # direction of the change, so try one order and fall back to the other.
        try:
            _write(path, str(limit_bytes))
            if memsw.exists():
                _write(memsw, str(limit_bytes))
        except OSError:
            if memsw.exists():
                _write(memsw, str(limit_bytes))
            _write(path, str(limit_bytes))

    def set_pids_limit(self, limit: int) -> None:
        path = self._file("pids", "pids.max", "pids.max")
        if path is not None:
            _write(path, str(limit))

    def oom_kills(self) -> int:
        """Cumulative count of OOM kills in this group (0 where the kernel does not say)."""
        with contextlib.suppress(OSError, ValueError):
            text = self._read_counter("oom", lambda: self._file(
                "memory", "memory.oom_control", "memory.events"))
            for line in (text or "").splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill":
                    return int(value)
        return 0

    def cpu_usage_ns(self) -> int | None:
        """CPU time used in this group so far (jail tools, harnesses, programs, dead or alive),
        in ns; None where the host does not account it."""
        with contextlib.suppress(OSError, ValueError):
            if self.version == 2 and "unified" in self.paths:
                text = self._read_counter("cpu", lambda: self.paths["unified"] / "cpu.stat")
                for line in text.splitlines():
                    key, _, value = line.partition(" ")
                    if key == "usage_usec":
                        return int(value) * 1000
            elif "cpuacct" in self.paths:
                return int(self._read_counter(
                    "cpu", lambda: self.paths["cpuacct"] / "cpuacct.usage"))
        return None

    def pids(self) -> list[int]:
        found: set[int] = set()
        for procs in self.procs_files:
            with contextlib.suppress(OSError):
                found.update(int(x) for x in _read(procs).split())
        return sorted(found)

    def attach(self, pid: int) -> None:
        for procs in self.procs_files:
            _write(procs, str(pid))

    def kill_all(self) -> None:
        for pid in self.pids():
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


@dataclass
class CgroupTree:
    """The pool's directory of slot groups, and what the host did not allow."""

    version: int | None
    base_paths: dict[str, Path]
    degraded: dict[str, str]  # feature -> reason
    slots: list[SlotCgroup] = field(default_factory=list)

    @classmethod
    def create(cls, slot_cpus: list[list[int]], root: Path = CGROUP_ROOT) -> CgroupTree:
        """Make one group per slot (pinned to `slot_cpus[i]`); never raises for a host that
        does not allow it, it records the degraded features instead."""
        name = f"p{os.getpid()}-{next(_pool_counter)}"
        unified = _unified_root(root)
        if unified is not None:
            _reclaim([unified / "sandbox_cluster" / name])
            return cls._create_v2(unified, name, slot_cpus)
        if any((root / c / "cgroup.procs").is_file() for c in CONTROLLERS):
            _reclaim([root / c / "sandbox_cluster" / name for c in CONTROLLERS + ACCOUNTING])
            return cls._create_v1(root, name, slot_cpus)
        return cls(None, {}, {c: f"no cgroup hierarchy under {root}" for c in CONTROLLERS},
                   [SlotCgroup(0, {}) for _ in slot_cpus])

    @classmethod
    def _create_v1(cls, root: Path, name: str, slot_cpus: list[list[int]]) -> CgroupTree:
        degraded, bases = {}, {}
        slots = [SlotCgroup(1, {}) for _ in slot_cpus]
        for controller in CONTROLLERS + ACCOUNTING:
            if controller in ACCOUNTING and not (root / controller / "cgroup.procs").is_file():
                continue
            top = root / controller / "sandbox_cluster"
            try:
                top.mkdir(exist_ok=True)
                _sweep_stale(top)
                base = top / name
                base.mkdir()
                if controller == "cpuset":
                    for parent in (top, base):
                        for key in ("cpuset.cpus", "cpuset.mems"):
                            if not _read(parent / key).strip():
                                _write(parent / key, _read(parent.parent / key).strip())
                for index, cpus in enumerate(slot_cpus):
                    group = base / f"slot{index}"
                    group.mkdir()
                    if controller == "cpuset":
                        _write(group / "cpuset.mems", _read(base / "cpuset.mems").strip())
                        _write(group / "cpuset.cpus", ",".join(map(str, cpus)))
                    slots[index].paths[controller] = group
                    slots[index].procs_files.append(group / "cgroup.procs")
                bases[controller] = base
            except OSError as exc:
                if controller in CONTROLLERS:
                    degraded[controller] = f"cgroup v1 {controller}: {exc}"
                for slot in slots:
                    slot.paths.pop(controller, None)
                    slot.procs_files = [p for p in slot.procs_files
                                        if controller not in p.parts]
        for slot in slots:
            slot.enabled = frozenset(slot.paths)
        return cls(1, bases, degraded, slots)

    @classmethod
    def _create_v2(cls, unified: Path, name: str, slot_cpus: list[list[int]]) -> CgroupTree:
        top = unified / "sandbox_cluster"
        degraded: dict[str, str] = {}
        try:
            top.mkdir(exist_ok=True)
            _sweep_stale(top)
            available = set(_read(unified / "cgroup.controllers").split())
            wanted = [c for c in CONTROLLERS if c in available]
            for c in CONTROLLERS:
                if c not in available:
                    degraded[c] = f"cgroup v2 controller {c} not available"
            enable = " ".join(f"+{c}" for c in wanted)
            for parent in (unified, top):
                with contextlib.suppress(OSError):
                    _write(parent / "cgroup.subtree_control", enable)
            base = top / name
            base.mkdir()
            _write(base / "cgroup.subtree_control", enable)
            enabled = frozenset(c.lstrip("+") for c in _read(base / "cgroup.subtree_control").split())
            slots = []
            for index, cpus in enumerate(slot_cpus):
                group = base / f"slot{index}"
                group.mkdir()
                if "cpuset" in enabled:
                    _write(group / "cpuset.cpus", ",".join(map(str, cpus)))
                slots.append(SlotCgroup(2, {"unified": group}, [group / "cgroup.procs"],
                                        enabled))
            for c in wanted:
                if c not in enabled:
                    degraded[c] = f"cgroup v2 controller {c} could not be enabled"
            return cls(2, {"unified": base}, degraded, slots)
        except OSError as exc:
            return cls(2, {}, {c: f"cgroup v2: {exc}" for c in CONTROLLERS},
                       [SlotCgroup(2, {}) for _ in slot_cpus])

    def remove(self) -> None:
        """Kill what is left and delete the pool's groups (best effort, idempotent)."""
        for slot in self.slots:
            slot.kill_all()
            slot.close_files()
        for base in self.base_paths.values():
            _remove_group(base)
        self.base_paths = {}


def _remove_group(path: Path) -> None:
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir():
            _remove_group(child)
    for _ in range(100):  # EBUSY while killed processes are still exiting
        try:
            path.rmdir()  # cgroupfs directories are removed with rmdir, files and all
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.01)


def _members(group: Path) -> tuple[set[int], bool]:
    """(pids listed in `group` and every group below it, whether a member is hidden from this
    process: listed as pid 0, or none listed while v2 says the subtree is populated)."""
    pids: set[int] = set()
    hidden = False
    for where, _, _ in os.walk(group):
        with contextlib.suppress(OSError, ValueError):
            listed = [int(x) for x in _read(Path(where) / "cgroup.procs").split()]
            hidden |= 0 in listed
            pids.update(pid for pid in listed if pid > 0)
    if not pids:
        with contextlib.suppress(OSError):
            hidden |= "populated 1" in _read(group / "cgroup.events").splitlines()
    return pids, hidden


def _reclaim(groups: list[Path]) -> None:
    """Take back this pool's own name from an earlier process with the same pid (the module
    docstring says why its visible members are that process's leftovers): kill them, wait for
    them to exit, remove the groups. CgroupConflict if a member is hidden from us or a group
    stays."""
    groups = [group for group in groups if group.is_dir()]
    if not groups:
        return
    found = [_members(group) for group in groups]
    hidden = [str(group) for group, (_, hide) in zip(groups, found) if hide]
    if hidden:
        raise CgroupConflict(
            f"cgroup {hidden[0]} is left over from an earlier pool with this pid and holds "
            "processes of another pid namespace (maybe a live pool in another container "
            "sharing this cgroup tree); end them or remove the group, then start again")
    pids = set().union(*(members for members, _ in found))
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + RECLAIM_WAIT_S
    while pids and time.monotonic() < deadline:
        for pid in list(pids):
            # Orphans are re-parented to pid 1: when that is this pool, they are zombies of
            # ours until reaped.
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, os.WNOHANG)
        pids = set().union(*(_members(group)[0] for group in groups))
        if pids:
            time.sleep(0.01)
    for group in groups:
        _remove_group(group)
    left = [str(group) for group in groups if group.exists()]
    if left:
        raise CgroupConflict(
            f"cgroup {left[0]} is left over from an earlier pool with this pid and could not "
            f"be removed (members still listed: {sorted(pids)[:10]}); end them or remove the "
            "group, then start again")


def _sweep_stale(top: Path) -> None:
    for entry in top.iterdir():
        if entry.is_dir() and entry.name.startswith("p") and not _owner_alive(entry.name):
            _remove_group(entry)

