"""The bubblewrap (`bwrap`) backend.

bwrap has no limits or timers of its own, so the supervisor adds them: `/bin/sh` sets the
jail-level rlimits with `ulimit` and execs bwrap; the harness sets the per-test ones. bwrap
runs as the slot's unprivileged harness uid and creates the user namespace; with
`--userns-block-fd` it then waits while the (root) supervisor writes a two-uid map (harness
and program, see `jails/__init__.py`) and moves bwrap and the namespace's first process into
the slot's cgroups, and only then continues. Without root, bwrap maps the one uid itself.

bwrap's `--unshare-pid` means wait4() on bwrap never reports the program's CPU time: that is
why timing and rusage come from the harness, inside the jail, never from bwrap.
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import shutil
import time

from sandbox_cluster.jails.base import (
    CAPS,
    JAIL_ENV,
    JailBackend,
    JailProcess,
    JailStartError,
    Placement,
    mount_parents,
)

INFO_DEADLINE_S = 10.0


class BubblewrapBackend(JailBackend):
    name = "bwrap"

    def __init__(self, *args, binary: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.binary = binary or shutil.which("bwrap")

    def _probe(self) -> str | None:
        if not self.binary:
            return "bwrap not found on PATH"
        return super()._probe()

    def launcher(self) -> list[str]:
        """`/bin/sh` applying the jail-level rlimits (dash units: -f in 512-byte blocks,
        -s/-l in KiB) before exec-ing bwrap."""
        env = self.envelope
        limits = [("-c", 0), ("-t", env.lifetime_s), ("-f", env.fsize_mb * 2048),
                  ("-n", env.nofile), ("-p", env.nproc), ("-s", env.stack_mb * 1024),
                  ("-l", env.memlock_kb)]
        script = "; ".join(f"ulimit {flag} {value} || exit 111" for flag, value in limits)
        return ["/bin/sh", "-c", script + '; exec "$@"', "sh"]

    def command(self, info_fd: int | None, block_fd: int | None) -> list[str]:
        env = self.envelope
        argv = [self.binary, "--unshare-user", "--unshare-pid", "--unshare-net",
                "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--as-pid-1",
                "--die-with-parent", "--new-session", "--hostname", "sandbox", "--clearenv",
                "--cap-drop", "ALL"]
        if info_fd is not None:
            argv += ["--info-fd", str(info_fd), "--userns-block-fd", str(block_fd)]
            for cap in CAPS:
                argv += ["--cap-add", cap]
        for key, value in JAIL_ENV.items():
            argv += ["--setenv", key, value]
        mounts = self.runtime_mounts()
        # bwrap creates the missing parents of a bind with mode 0700 (0.8.0, whatever its man
        # page says), which the program's uid cannot traverse: an interpreter outside /usr
        # could then not import its own standard library. Create them 0755 first.
        for parent in mount_parents(mounts):
            argv += ["--perms", "0755", "--dir", parent]
        for path, target in mounts:
            argv += ["--symlink", target, path] if target else ["--ro-bind", path, path]
        for path in self.masked_dirs():
            argv += ["--perms", "0555", "--size", "4096", "--tmpfs", path, "--remount-ro", path]
        argv += ["--proc", "/proc", "--dev", "/dev",
                 "--perms", "1777", "--size", str(env.tmpfs_mb << 20), "--tmpfs", "/tmp",
                 "--perms", "1777", "--size", str(env.shm_mb << 20), "--tmpfs", "/dev/shm",
                 "--chdir", self.work_dir]
        return [*argv, "--", *self.harness_argv()]

    def spawn(self, placement: Placement) -> JailProcess:
        if not self.uid_separation:
            return JailProcess(self._popen([*self.launcher(), *self.command(None, None)]),
                               placement.cgroup)
        info_r, info_w = os.pipe()
        block_r, block_w = os.pipe()
        outer_harness, outer_program = self.outside_uids(placement.slot)
        try:
            popen = self._popen([*self.launcher(), *self.command(info_w, block_r)],
                                pass_fds=(info_w, block_r), user=outer_harness,
                                group=outer_harness, extra_groups=[])
        finally:
            os.close(info_w)
            os.close(block_r)
        jail = JailProcess(popen, placement.cgroup)
        try:
            child_pid = _read_child_pid(info_r, jail)
            mapping = f"0 {outer_harness} 1\n1 {outer_program} 1\n"
            with open(f"/proc/{child_pid}/uid_map", "w") as f:
                f.write(mapping)
            with open(f"/proc/{child_pid}/setgroups", "w") as f:
                f.write("deny")
            with open(f"/proc/{child_pid}/gid_map", "w") as f:
                f.write(mapping)
            if placement.cgroup is not None:
                placement.cgroup.attach(popen.pid)
                placement.cgroup.attach(child_pid)
            os.write(block_w, b"1")
        except (OSError, ValueError, JailStartError) as exc:
            jail.kill()
            raise JailStartError(f"bwrap: {exc}; stderr: {jail.diagnostics()}") from exc
        finally:
            os.close(info_r)
            with contextlib.suppress(OSError):
                os.close(block_w)
        return jail


def _read_child_pid(info_fd: int, jail: JailProcess) -> int:
    """bwrap writes a JSON object with "child-pid" to --info-fd once the namespaces exist."""
    data = b""
    deadline = time.monotonic() + INFO_DEADLINE_S
    poller = select.poll()
    poller.register(info_fd, select.POLLIN)
    while time.monotonic() < deadline:
        if not poller.poll(max(1, int((deadline - time.monotonic()) * 1000))):
            continue
        chunk = os.read(info_fd, 4096)
        if not chunk:
            break
        data += chunk
        with contextlib.suppress(ValueError):
            return int(json.loads(data)["child-pid"])
    raise JailStartError(f"no child pid from bwrap --info-fd (got {data[:200]!r}); "
                         f"stderr: {jail.diagnostics()}")
