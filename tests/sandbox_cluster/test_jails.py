"""Jail backends: registry, explicit limits on the command lines, the filesystem a jail sees
(binds and package masks on a fake host; the real installs are test_jail_filesystem.py's), the
seccomp filter (numbers against the kernel headers, behaviour through a small BPF
interpreter), cgroups, and the supervisor's frame channel to a harness."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import itertools
import os
import re
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sandbox_cluster import harness, jails
from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import (
    UID_BLOCK,
    JailBackend,
    JailEnvelope,
    JailUnavailable,
    Placement,
    base,
    cgroups,
    get_backend,
    session,
)
from sandbox_cluster.jails import seccomp as sc
from sandbox_cluster.jails.base import DEFAULT_UID_BASE, InterpreterLayout, mount_parents
from sandbox_cluster.jails.bubblewrap import BubblewrapBackend
from sandbox_cluster.jails.cgroups import CgroupTree
from sandbox_cluster.jails.nsjail import NsjailBackend
from sandbox_cluster.pool import LocalPool
from tests.sandbox_cluster.frames import read_frame
from tests.sandbox_cluster.jail_required import no_jail


def _usable(name: str) -> JailBackend:
    try:
        return get_backend(name)
    except JailUnavailable as exc:
        no_jail(f"{name} cannot run here: {exc}")


# --- registry -------------------------------------------------------------------------------


def test_default_backend_is_a_real_jail_never_nojail() -> None:
    try:
        backend = get_backend(None)
    except JailUnavailable:
        no_jail("no jail backend on this host")
    assert backend.name in ("nsjail", "bwrap")
    if jails.unavailable_reason(NsjailBackend()) is None:
        assert backend.name == "nsjail"


def test_backend_names_and_aliases() -> None:
    assert isinstance(_usable("bubblewrap"), BubblewrapBackend)
    with pytest.raises(ValueError, match=r"unknown jail backend 'docker'.*nsjail"):
        get_backend("docker")


def test_nojail_only_by_name_and_loudly(caplog) -> None:
    backend = get_backend("nojail")
    assert "WITHOUT isolation" in caplog.text
    assert backend.name == "nojail" and not backend.uid_separation


@pytest.mark.skipif(os.geteuid() != 0, reason="uid blocks are reserved only as root")
def test_each_backend_reserves_its_own_uid_block() -> None:
    first, second = NsjailBackend(), NsjailBackend()
    assert abs(first.uid_base - second.uid_base) >= UID_BLOCK
    freed = first.uid_base
    first.release()
    third = NsjailBackend()
    assert third.uid_base == freed  # a released block is reused
    with pytest.raises(ValueError, match="outside the backend's uid block"):
        third.outside_uids(UID_BLOCK // 2)
    second.release()
    third.release()


def test_nojail_still_runs_and_times_programs() -> None:
    with LocalPool(backend="nojail", slots=1, prestart=False) as pool:
        results = pool.run("import time, os\ntime.sleep(0.05)\nprint(os.getuid())",
                           [TestCase(""), TestCase("")], Limits(time_s=2))
    assert [r.status for r in results] == [Status.SUCCESS] * 2
    assert all(r.duration_s >= 0.05 for r in results)
    if os.geteuid() == 0:  # program code never runs with capabilities, even here
        assert results[0].stdout == b"65534\n"


def test_unreachable_interpreter_is_reported() -> None:
    backend = NsjailBackend(python="/root/.no-such-python")
    assert "not reachable by an unprivileged uid" in jails.unavailable_reason(backend)


# --- command lines ----------------------------------------------------------------------------


def test_nsjail_sets_every_limit_explicitly() -> None:
    envelope = JailEnvelope()
    argv = NsjailBackend(envelope=envelope).command(Placement(3, (0,)))
    flags = dict(itertools.pairwise(argv))
    for flag in ("--rlimit_as", "--rlimit_core", "--rlimit_cpu", "--rlimit_fsize",
                 "--rlimit_nofile", "--rlimit_nproc", "--rlimit_stack", "--rlimit_memlock",
                 "--rlimit_rtprio", "--rlimit_msgqueue", "--time_limit", "--nice_level"):
        assert flag in flags, flag
    assert flags["--rlimit_fsize"] == str(envelope.fsize_mb)
    assert flags["--nice_level"] == "0"  # nsjail's default 19 would slow every measurement
    assert "--disable_clone_newnet" not in argv and "--keep_caps" not in argv
    mounted = [argv[i + 1] for i, a in enumerate(argv) if a in ("--bindmount_ro", "--bindmount")]
    assert not any(m.startswith(("/etc", "/root", "/home", "/work")) for m in mounted)


def test_bwrap_namespaces_and_limits() -> None:
    backend = BubblewrapBackend(binary="/usr/bin/bwrap")
    argv = backend.command(7, 8)
    for flag in ("--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
                 "--unshare-uts", "--as-pid-1", "--die-with-parent", "--new-session",
                 "--clearenv"):
        assert flag in argv
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    script = backend.launcher()[2]
    for flag in ("-c 0", "-n", "-p", "-s", "-f", "-t"):
        assert f"ulimit {flag}" in script


# --- the jail's filesystem -----------------------------------------------------------------


@pytest.fixture
def fake_host(tmp_path: Path, monkeypatch) -> dict[str, Path]:
    """A host tree: system trees with a distribution's and a hidden package directory, an
    install under usr/local and a checkout under usr/src (neither a system tree), and an
    interpreter prefix under opt/ with its stdlib, site-packages (a package dir nested in
    it) and a venv-style src/ checkout."""
    t = tmp_path
    dirs = ["usr/bin", "usr/lib/x86_64-linux-gnu", "usr/lib/python3/dist-packages/jaxopt_rl",
            "usr/lib/python3.9/site-packages", "usr/lib/.hidden/site-packages",
            "usr/local/lib/python3.9/dist-packages/jaxopt_rl", "usr/src/app/jaxopt_rl",
            "opt/py/bin", "opt/py/lib/python3.9/lib-dynload",
            "opt/py/lib/python3.9/site-packages/vendored/site-packages", "opt/py/src/jaxopt-rl"]
    for d in dirs:
        (t / d).mkdir(parents=True)
    (t / "bin").symlink_to("usr/bin")
    (t / "opt/py/bin/python3.9").write_text("")
    monkeypatch.setattr(base, "RUNTIME_DIRS", (str(t / "bin"), str(t / "usr/bin"),
                                               str(t / "usr/lib"), str(t / "usr/lib64")))
    stdlib = t / "opt/py/lib/python3.9"
    layout = InterpreterLayout(
        code=(str(t / "opt/py/bin/python3.9"), str(stdlib), str(stdlib / "lib-dynload")),
        site=(str(stdlib / "site-packages"), str(t / "opt/py/local/lib/python3.9/x-packages")))
    monkeypatch.setattr(base, "interpreter_layout", lambda python: layout)
    return {"root": t, "python": t / "opt/py/bin/python3.9"}


def test_a_jail_binds_system_trees_and_the_interpreter_and_masks_every_package_dir(
        fake_host) -> None:
    t = fake_host["root"]
    backend = NsjailBackend(python=str(fake_host["python"]), uid_base=DEFAULT_UID_BASE)
    assert backend.runtime_mounts() == [
        (str(t / "bin"), "usr/bin"), (str(t / "usr/bin"), None), (str(t / "usr/lib"), None),
        (str(t / "opt/py/bin/python3.9"), None), (str(t / "opt/py/lib/python3.9"), None)]
    # Outermost first; the nested one lies under a mask already; usr/local is not bound.
    assert backend.masked_dirs() == [str(t / p) for p in (
        "usr/lib/.hidden/site-packages", "usr/lib/python3/dist-packages",
        "usr/lib/python3.9/site-packages", "opt/py/lib/python3.9/site-packages")]
    ancestors = [str(p) for p in reversed(t.parents) if str(p) != "/"] + [str(t)]
    assert mount_parents(backend.runtime_mounts()) == [
        *ancestors, str(t / "usr"), str(t / "opt"), str(t / "opt/py"), str(t / "opt/py/bin"),
        str(t / "opt/py/lib")]


def test_nsjail_masks_package_dirs_after_the_binds_with_read_only_tmpfs(fake_host) -> None:
    backend = NsjailBackend(python=str(fake_host["python"]), uid_base=DEFAULT_UID_BASE)
    argv = backend.command(Placement(0, (0,)))
    last_bind = max(i for i, a in enumerate(argv) if a == "--bindmount_ro")
    masks = [argv[i + 1] for i, a in enumerate(argv) if a == "--mount" and i > last_bind
             and ":tmpfs:ro," in argv[i + 1]]
    assert [m.split(":")[1] for m in masks] == backend.masked_dirs()
    assert all("mode=555" in m for m in masks)


def test_bwrap_creates_mount_parents_traversable_and_masks_read_only(fake_host) -> None:
    backend = BubblewrapBackend(python=str(fake_host["python"]), binary="/usr/bin/bwrap",
                                uid_base=DEFAULT_UID_BASE)
    argv = backend.command(None, None)
    first_bind = argv.index("--ro-bind")
    made = [i for i, a in enumerate(argv) if a == "--dir"]
    assert [argv[i + 1] for i in made] == mount_parents(backend.runtime_mounts())
    for i in made:  # bwrap itself would create them 0700: the program's uid could not pass
        assert argv[i - 2:i] == ["--perms", "0755"] and i < first_bind, argv[i + 1]
    last_bind = max(i for i, a in enumerate(argv) if a == "--ro-bind")
    for d in backend.masked_dirs():
        i = argv.index(d, last_bind)
        assert argv[i - 5:i + 3] == ["--perms", "0555", "--size", "4096", "--tmpfs", d,
                                     "--remount-ro", d], d


def test_an_interpreter_that_cannot_report_its_layout_is_unavailable() -> None:
    backend = NsjailBackend(python="/bin/true", uid_base=DEFAULT_UID_BASE)
    assert "did not report its layout" in jails.unavailable_reason(backend)


def _limits_table(text: str) -> dict[str, list[str]]:
    return {line[:26].strip(): line[26:].split()[:2] for line in text.splitlines()[1:]}


@pytest.mark.parametrize("name", ["nsjail", "bwrap"])
def test_jail_and_program_limits_are_in_effect(name: str) -> None:
    backend = _usable(name)
    # The program's parent is the harness's job process (which set the limits its children
    # inherit); pid 1 of the jail only forks job processes.
    program = ("import os\nprint(open(f'/proc/{os.getppid()}/limits').read() + '===' + "
               "open('/proc/self/limits').read())")
    limits = Limits(time_s=2.5, memory_mb=300, output_mb=3)
    with LocalPool(backend=name, slots=1, prestart=False) as pool:
        result = pool.run(program, [TestCase("")], limits)[0]
    assert result.status is Status.SUCCESS, result
    jail_text, program_text = result.stdout.decode().split("===")
    jail, child = _limits_table(jail_text), _limits_table(program_text.strip())
    envelope = backend.envelope
    assert jail["Max stack size"][0] == str(envelope.stack_mb << 20)  # set by nsjail / ulimit
    assert jail["Max file size"] == [str(envelope.fsize_mb << 20)] * 2
    assert jail["Max open files"] == [str(harness.CHILD_NOFILE)] * 2  # lowered by the harness
    assert jail["Max processes"] == [str(harness.CHILD_NPROC)] * 2
    assert jail["Max core file size"] == ["0", "0"]
    assert child["Max address space"] == [str(300 << 20)] * 2
    assert child["Max file size"] == [str(3 << 20)] * 2
    assert child["Max cpu time"] == ["4", "5"]  # ceil(2.5) + 1 soft, +1 hard: a backstop


# --- seccomp ------------------------------------------------------------------------------------

HEADERS = {"x86_64": Path("/usr/include/x86_64-linux-gnu/asm/unistd_64.h"),
           "aarch64": Path("/usr/include/asm-generic/unistd.h")}


@pytest.mark.parametrize("arch", sorted(sc.SYSCALLS))
def test_syscall_numbers_match_kernel_headers(arch: str) -> None:
    header = HEADERS[arch]
    if not header.exists():
        pytest.skip(f"{header} not installed")
    numbers = {name: int(nr) for name, nr in
               re.findall(r"#define __NR_(\w+)\s+(\d+)\b", header.read_text())}
    for name, nr in sc.SYSCALLS[arch].items():
        assert numbers[name] == nr, f"{arch} {name}"


def run_bpf(program: bytes, nr: int, arch: int, args: tuple[int, ...] = ()) -> int:
    """A classic-BPF interpreter for the opcodes the filter uses (the slow reference)."""
    data = struct.pack("<iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    insns = [struct.unpack("<HBBI", program[i:i + 8]) for i in range(0, len(program), 8)]
    pc, acc = 0, 0
    while True:
        code, jt, jf, k = insns[pc]
        if code == sc._LD_W_ABS:
            (acc,) = struct.unpack_from("<I", data, k)
            pc += 1
        elif code in (sc._JEQ_K, sc._JGE_K, sc._JSET_K):
            taken = {sc._JEQ_K: acc == k, sc._JGE_K: acc >= k, sc._JSET_K: acc & k != 0}[code]
            pc += 1 + (jt if taken else jf)
        elif code == sc._RET_K:
            return k
        else:
            raise AssertionError(f"unexpected opcode {code:#x}")


X86 = sc.AUDIT_ARCH["x86_64"]
FILTER = sc.build_filter("x86_64")
EPERM = sc.RET_ERRNO | errno.EPERM
NR = sc.SYSCALLS["x86_64"]


def test_filter_denies_allows_and_kills() -> None:
    for name in sc.DENIED + sc.X86_ONLY_DENIED:
        assert run_bpf(FILTER, NR[name], X86) == EPERM, name
    assert run_bpf(FILTER, 0, X86) == sc.RET_ALLOW  # read
    assert run_bpf(FILTER, 57, X86) == sc.RET_ALLOW  # fork
    assert run_bpf(FILTER, 0, sc.AUDIT_ARCH["aarch64"]) == sc.RET_KILL_PROCESS
    assert run_bpf(FILTER, 0x40000000 | 1, X86) == sc.RET_KILL_PROCESS  # x32 ABI
    assert run_bpf(FILTER, NR["clone3"], X86) == sc.RET_ERRNO | errno.ENOSYS
    thread_flags = 0x3D0F00
    assert run_bpf(FILTER, NR["clone"], X86, (thread_flags,)) == sc.RET_ALLOW
    assert run_bpf(FILTER, NR["clone"], X86, (thread_flags | 0x10000000,)) == EPERM
    assert run_bpf(FILTER, NR["prlimit64"], X86, (0,)) == sc.RET_ALLOW
    assert run_bpf(FILTER, NR["prlimit64"], X86, (1,)) == EPERM
    assert run_bpf(FILTER, NR["prlimit64"], X86, (1 << 32,)) == EPERM


@pytest.mark.parametrize("arch", sorted(sc.SYSCALLS))
def test_filter_allows_only_the_local_socket_families(arch: str) -> None:
    program, table, audit = sc.build_filter(arch), sc.SYSCALLS[arch], sc.AUDIT_ARCH[arch]
    refused = sc.RET_ERRNO | errno.EAFNOSUPPORT
    # AF_UNIX, AF_INET, AF_INET6, AF_NETLINK pass; AF_VSOCK (40), AF_PACKET (17), AF_ALG (38),
    # AF_BLUETOOTH (31), AF_KEY (15) and an unknown family do not.
    for call in ("socket", "socketpair"):
        for family in (1, 2, 10, 16):
            assert run_bpf(program, table[call], audit, (family, 1)) == sc.RET_ALLOW
        for family in (40, 17, 38, 31, 15, 0, 45, 1 << 20):
            assert run_bpf(program, table[call], audit, (family, 1)) == refused, (call, family)
    assert run_bpf(program, table["inotify_init1"], audit) == sc.RET_ERRNO | errno.EPERM


@given(nr=st.integers(0, 460))
def test_filter_allows_everything_not_listed(nr: int) -> None:
    special = {NR[n] for n in sc.DENIED + sc.X86_ONLY_DENIED
               + ("clone", "clone3", "prlimit64", "socket", "socketpair")}
    if nr not in special:
        assert run_bpf(FILTER, nr, X86, (0, 0)) == sc.RET_ALLOW


def test_filter_is_none_for_unknown_arch() -> None:
    assert sc.build_filter("riscv64") is None


# --- cgroups ----------------------------------------------------------------------------------


def test_cgroup_tree_degrades_without_a_hierarchy(tmp_path: Path) -> None:
    tree = CgroupTree.create([[0], [1]], root=tmp_path)
    assert tree.version is None
    assert set(tree.degraded) == {"memory", "pids", "cpuset"}
    assert len(tree.slots) == 2


def test_cgroup_v2_layout_on_a_fake_hierarchy(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    tree = CgroupTree.create([[2], [3]], root=tmp_path)
    assert tree.version == 2 and tree.degraded == {}
    slot = tree.slots[1]
    group = slot.paths["unified"]
    assert (group / "cpuset.cpus").read_text() == "3"
    slot.set_memory_limit(300 << 20)
    slot.set_pids_limit(64)
    assert (group / "memory.max").read_text() == str(300 << 20)
    assert (group / "memory.swap.max").read_text() == "0"
    assert (group / "pids.max").read_text() == "64"
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 4\noom 2\noom_kill 2\n")
    assert slot.oom_kills() == 2
    assert slot.procs_files == [group / "cgroup.procs"]


def test_cgroup_v2_hierarchy_without_our_controllers_is_ignored(tmp_path: Path) -> None:
    (tmp_path / "unified").mkdir()
    (tmp_path / "unified" / "cgroup.controllers").write_text("hugetlb\n")
    assert CgroupTree.create([[0]], root=tmp_path).version is None


V1 = Path("/sys/fs/cgroup/memory/cgroup.procs")


@pytest.mark.skipif(not os.access(V1.parent, os.W_OK), reason="no writable cgroup v1 here")
def test_cgroup_v1_slot_limits_attach_kill_remove() -> None:
    tree = CgroupTree.create([[0]])
    assert tree.version == 1 and tree.degraded == {}
    slot = tree.slots[0]
    slot.set_memory_limit(200 << 20)
    assert (slot.paths["memory"] / "memory.limit_in_bytes").read_text().strip() == str(200 << 20)
    assert slot.oom_kills() == 0
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        slot.attach(sleeper.pid)
        assert slot.pids() == [sleeper.pid]
        slot.kill_all()
        assert sleeper.wait(timeout=5) == -9
    finally:
        sleeper.kill()
        tree.remove()
    assert not any(path.exists() for path in slot.paths.values())


@pytest.mark.skipif(not os.access(V1.parent, os.W_OK), reason="no writable cgroup v1 here")
def test_stale_pool_directories_are_swept() -> None:
    stale = Path("/sys/fs/cgroup/pids/sandbox_cluster/p999999999-0")
    stale.mkdir(parents=True, exist_ok=True)
    tree = CgroupTree.create([[0]])
    tree.remove()
    assert not stale.exists()


# A pool whose pid an earlier, crashed pool also had (pid 1 of a restarted container) wants the
# directory that pool left: `_pool_counter` is set so the next name is known.
LEFTOVER_INDEX = 424_242


def _leftover(top: Path, monkeypatch) -> Path:
    monkeypatch.setattr(cgroups, "_pool_counter", itertools.count(LEFTOVER_INDEX))
    return top / "sandbox_cluster" / f"p{os.getpid()}-{LEFTOVER_INDEX}"


def test_an_empty_leftover_with_this_pools_name_is_reclaimed(tmp_path: Path, monkeypatch) -> None:
    """The name clash once made every controller degraded (jails without limits)."""
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    stale = _leftover(tmp_path, monkeypatch)
    (stale / "slot0").mkdir(parents=True)
    (stale / "slot7").mkdir()
    tree = CgroupTree.create([[2]], root=tmp_path)
    assert tree.version == 2 and tree.degraded == {}
    assert tree.base_paths["unified"] == stale
    assert [p.name for p in stale.iterdir() if p.is_dir()] == ["slot0"]  # slot7 went with it
    assert (stale / "slot0" / "cpuset.cpus").read_text() == "2"


@pytest.mark.parametrize("files", [
    {"cgroup.procs": "0\n"},  # a member listed as pid 0: not in this pid namespace
    {"cgroup.procs": "", "cgroup.events": "populated 1\nfrozen 0\n"},  # none listed, populated
])
def test_a_leftover_holding_processes_we_cannot_see_refuses_to_start(
        tmp_path: Path, monkeypatch, files) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    stale = _leftover(tmp_path, monkeypatch)
    (stale / "slot0").mkdir(parents=True)
    for name, text in files.items():
        where = stale if name == "cgroup.events" else stale / "slot0"
        (where / name).write_text(text)
    with pytest.raises(cgroups.CgroupConflict, match=re.escape(str(stale))):
        CgroupTree.create([[0]], root=tmp_path)
    assert (stale / "slot0").is_dir()  # nothing removed, nothing killed


def _orphan_sleeper() -> int:
    """A `sleep` that is not this process's child (as a crashed pool's jails are not)."""
    out = subprocess.run(["sh", "-c", "sleep 120 >/dev/null 2>&1 & echo $!"],
                         capture_output=True, text=True, check=True).stdout
    return int(out)


def _gone(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] in "ZX"
    except OSError:
        return True


@pytest.mark.skipif(not os.access(V1.parent, os.W_OK), reason="no writable cgroup v1 here")
def test_a_leftover_with_this_pools_name_and_live_jails_is_killed_and_reclaimed(
        monkeypatch) -> None:
    root = Path("/sys/fs/cgroup")
    groups = [_leftover(root / c, monkeypatch) / "slot0" for c in ("memory", "pids")]
    sleeper = _orphan_sleeper()
    try:
        for group in groups:
            group.mkdir(parents=True)
            (group / "cgroup.procs").write_text(str(sleeper))
        tree = CgroupTree.create([[0]])
        try:
            assert tree.degraded == {}
            assert _gone(sleeper)
            assert tree.slots[0].pids() == []
            tree.slots[0].set_memory_limit(200 << 20)
            limit = groups[0] / "memory.limit_in_bytes"
            assert limit.read_text().strip() == str(200 << 20)
        finally:
            tree.remove()
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(sleeper, 9)
        for group in groups:
            for path in (group, group.parent):
                with contextlib.suppress(OSError):
                    path.rmdir()


@pytest.mark.skipif(not os.access(V1.parent, os.W_OK), reason="no writable cgroup v1 here")
def test_a_pool_after_a_crashed_pool_with_its_pid_runs_with_limits(monkeypatch) -> None:
    """Once, the next pool ran without memory, pids or cpuset limits, with a warning."""
    stale = [_leftover(Path("/sys/fs/cgroup") / c, monkeypatch) for c in cgroups.CONTROLLERS]
    for group in stale:
        (group / "slot0").mkdir(parents=True)
    try:
        try:
            pool = LocalPool(slots=1, prestart=False)
        except JailUnavailable as exc:
            no_jail(f"no jail here: {exc}")
        with pool:
            assert not set(cgroups.CONTROLLERS) & set(pool.degraded), pool.degraded
            result = pool.run("print(2 * int(input()))", [TestCase("21", "42")],
                              Limits(time_s=5, memory_mb=256))[0]
            assert result.status is Status.SUCCESS, result
        assert not any(group.exists() for group in stale)
    finally:
        for group in stale:
            for path in (group / "slot0", group):
                with contextlib.suppress(OSError):
                    path.rmdir()


def test_oom_kill_is_reported_as_memory_limit() -> None:
    pool_backend = _usable("nsjail")
    with LocalPool(backend=pool_backend.name, slots=1, prestart=False) as pool:
        if "memory" in pool.degraded:
            pytest.skip("no memory cgroup here")
        program = ("import os\nkids = [os.fork() for _ in range(3)]\n"
                   "block = bytearray(200 * 2**20)\nfor i in range(0, len(block), 4096):\n"
                   "    block[i] = 1\n")
        result = pool.run(program, [TestCase("")], Limits(time_s=5, memory_mb=300))[0]
    assert result.status is Status.MEMORY_LIMIT, result


def test_cgroup_cpu_usage_on_a_fake_v2_hierarchy(tmp_path: Path) -> None:
    (tmp_path / "cgroup.controllers").write_text("cpuset cpu memory pids\n")
    slot = CgroupTree.create([[0]], root=tmp_path).slots[0]
    stat = slot.paths["unified"] / "cpu.stat"
    stat.write_text("usage_usec 1500\nuser_usec 1000\nsystem_usec 500\n")
    assert slot.cpu_usage_ns() == 1_500_000
    stat.write_text("usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n")
    assert slot.cpu_usage_ns() == 2_500_000  # read afresh through the kept fd
    slot.close_files()
    assert CgroupTree.create([[0]], root=tmp_path / "none").slots[0].cpu_usage_ns() is None


@pytest.mark.skipif(not Path("/sys/fs/cgroup/cpuacct/cgroup.procs").is_file()
                    or not os.access(V1.parent, os.W_OK), reason="no writable cpuacct v1 here")
def test_cgroup_v1_accounts_cpu_and_keeps_no_inheritable_fd() -> None:
    tree = CgroupTree.create([[0]])
    slot = tree.slots[0]
    try:
        assert tree.degraded == {} and "cpuacct" in slot.paths
        before = slot.cpu_usage_ns()
        busy = subprocess.Popen([sys.executable, "-c", "import time\nt = time.process_time()\n"
                                 "while time.process_time() - t < 0.1: pass"])
        slot.attach(busy.pid)
        assert busy.wait(timeout=30) == 0
        assert slot.cpu_usage_ns() - before >= 0.05e9  # (attached a little after its start)
        assert slot.oom_kills() == 0
        assert all(fcntl.fcntl(fd, fcntl.F_GETFD) & fcntl.FD_CLOEXEC for fd in slot._fds.values())
    finally:
        tree.remove()
    assert slot._fds == {}


# --- the supervisor's channel to a harness ---------------------------------------------------


class _Pipes:
    """Stands in for a started jail: the channel's ends, and the harness's ends kept here."""

    def __init__(self) -> None:
        self.from_harness, self.harness_writes = os.pipe()
        self.harness_reads, self.to_harness = os.pipe()

    def close(self) -> None:
        for fd in (self.from_harness, self.harness_writes, self.harness_reads, self.to_harness):
            with contextlib.suppress(OSError):
                os.close(fd)


def _writer(fd: int, data: bytes, cuts: list[int]) -> threading.Thread:
    """Write `data` in pieces split at `cuts`, pausing between them (a harness trickling)."""
    def write() -> None:
        start = 0
        for end in [*sorted(cuts), len(data)]:
            harness.write_all(fd, data[start:end])
            start = end
            time.sleep(0.0005)
    thread = threading.Thread(target=write)
    thread.start()
    return thread


FRAME_HEADERS = st.dictionaries(st.sampled_from(["id", "type", "x"]),
                                st.one_of(st.integers(), st.text(max_size=5)), max_size=3)


@settings(max_examples=30, deadline=None)
@given(frames=st.lists(st.tuples(FRAME_HEADERS, st.lists(st.binary(max_size=300), max_size=2)),
                       min_size=1, max_size=4),
       cuts=st.lists(st.integers(0, 2000), max_size=6))
def test_channel_receives_frames_however_the_bytes_arrive(frames, cuts) -> None:
    pipes = _Pipes()
    try:
        data = b"".join(harness.encode_frame(h, tuple(p)) for h, p in frames)
        writer = _writer(pipes.harness_writes, data, [c for c in cuts if c < len(data)])
        channel = session.Channel(pipes)
        got = [channel.recv(time.monotonic() + 10, (300, 300)) for _ in frames]
        writer.join()
        assert [(h, p) for h, p in got] == [
            (dict(h, payload_sizes=[len(x) for x in p]), p) for h, p in frames]
    finally:
        pipes.close()


def test_channel_large_frames_both_ways_and_its_failures() -> None:
    pipes = _Pipes()
    try:
        channel = session.Channel(pipes)
        big = os.urandom(3 << 20)  # far beyond a pipe's buffer and the read-ahead
        echo = threading.Thread(target=lambda: harness.write_all(
            pipes.harness_writes, harness.encode_frame(*read_frame(pipes.harness_reads))))
        echo.start()
        channel.send({"type": "run", "id": 7}, (big, b"tail"), time.monotonic() + 10)
        header, payloads = channel.recv(time.monotonic() + 10, (4 << 20, 16))
        echo.join()
        assert header["id"] == 7 and payloads == [big, b"tail"]
        with pytest.raises(TimeoutError):
            channel.recv(time.monotonic() + 0.05, (16,))
        os.write(pipes.harness_writes, harness.encode_frame({"id": 1}, (b"x" * 20,)))
        with pytest.raises(session.HarnessLost, match="exceed"):
            channel.recv(time.monotonic() + 1, (16,))
    finally:
        pipes.close()
    pipes = _Pipes()  # (a channel that raised is never used again: its session is closed)
    try:
        channel = session.Channel(pipes)
        os.write(pipes.harness_writes, harness.encode_frame({"id": 2}, (b"abc",))[:-1])
        os.close(pipes.harness_writes)
        with pytest.raises(session.HarnessLost, match="exited"):
            channel.recv(time.monotonic() + 1, (16,))
    finally:
        pipes.close()


def test_an_unavailable_jail_fails_when_jails_are_required(monkeypatch) -> None:
    from tests.sandbox_cluster import jail_required

    monkeypatch.setenv(jail_required.REQUIRE_ENV, "1")
    with pytest.raises(pytest.fail.Exception, match="bwrap cannot run here"):
        jail_required.no_jail("bwrap cannot run here: no bwrap")
    monkeypatch.setenv(jail_required.REQUIRE_ENV, "0")
    with pytest.raises(pytest.skip.Exception, match="bwrap cannot run here"):
        jail_required.no_jail("bwrap cannot run here: no bwrap")


def test_launcher_requires_jails_in_the_test_command() -> None:
    script = (Path(__file__).parents[2] / "launch" / "local.sh").read_text()
    test_branch = script[script.index("  test)"):script.index(";;", script.index("  test)"))]
    assert 'export JAXOPT_REQUIRE_JAILS="${JAXOPT_REQUIRE_JAILS:-1}"' in test_branch
