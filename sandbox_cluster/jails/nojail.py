"""The no-jail backend: the harness as a plain subprocess, for developing the harness only.

No namespaces, no private filesystem, no network isolation: a program can read and write
whatever the supervisor's user can. It is never chosen by `get_backend(None)`; asking for it
by name logs a warning. When the supervisor runs as root the program child still drops to
`nobody` (the harness refuses to run program code with capabilities), and each job gets a
fresh temporary work directory.
"""

from __future__ import annotations

import logging
import os
import tempfile

from sandbox_cluster.jails.base import JAIL_ENV, JailBackend, JailProcess, Placement

log = logging.getLogger(__name__)
NOBODY = 65534


class NoJailBackend(JailBackend):
    name = "nojail"
    scratch_dirs: tuple[str, ...] = ()
    scratch_tmpfs = False

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        log.warning("sandbox backend 'nojail' selected: programs run WITHOUT isolation; "
                    "use it only to develop the harness")
        self._work = tempfile.mkdtemp(prefix="sandbox-nojail-")
        os.chmod(self._work, 0o1777)
        self.work_dir = self._work
        self.scratch_dirs = (self._work,)

    @property
    def uid_separation(self) -> bool:
        return False

    def child_ids(self) -> tuple[int, int] | None:
        return (NOBODY, NOBODY) if os.geteuid() == 0 else None

    def spawn(self, placement: Placement) -> JailProcess:
        return JailProcess(self._popen(self.harness_argv(), cwd=self.work_dir, env=JAIL_ENV),
                           None)
