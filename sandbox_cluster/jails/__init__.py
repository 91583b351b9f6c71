"""Jail backends: how a jail around the warm harness is started, limited and killed.

    backend = get_backend(None)           # nsjail where it runs, else bubblewrap
    jail = backend.spawn(placement)       # a started harness; jails.session speaks to it

Two first-class backends build the same environment inside the jail, so the harness and every
test see one world whichever runs (the hostile suite runs against both):
- a new user, pid, net, ipc, uts, mount (and cgroup) namespace; no network but loopback;
- read-only binds of the system's program and library trees (/usr/{bin,sbin,lib*,share} and
  the /bin, /lib symlinks; not /usr itself, so neither /usr/local nor /usr/src) and of what the
  interpreter runs from outside them, as it reports itself (executable, pyvenv.cfg, stdlib,
  lib-dynload, shared libraries; never its whole prefix); an empty read-only tmpfs over every
  site-packages/dist-packages directory inside those binds, so the jail sees the standard
  library and no installed package: not this project's packages nor its data set, whatever the
  install layout (the harness is standard library only and arrives as `-c` source); a
  private size-capped tmpfs at /tmp (the work dir) and at /dev/shm, /proc of the jail's own pid
  namespace, a handful of /dev nodes; no host /etc, home or work tree;
- as root: two uids mapped, the harness's (inside uid 0, outside `uid_base + 2*slot`) holding
  only CAP_SETUID/SETGID/KILL within the namespace, and the program's (inside uid 1, outside
  `uid_base + 2*slot + 1`) with no capability. Each backend reserves its own block of
  `UID_BLOCK` outside uids (an flock on /run/sandbox_cluster/uids/<block>.lock, released when
  the process dies), so two pools on one host never share a program uid. Without root there
  is one uid and no capabilities (reported as the degraded feature "uid_separation");
- the harness as pid 1 of the pid namespace, a new session, NO_NEW_PRIVS, the jail dying with
  its supervisor;
- jail-level rlimits (`JailEnvelope`, set explicitly: nsjail's own defaults, 600 s and 1 MiB
  files among them, would silently cap us) above the per-test limits the harness sets on each
  program child, and the slot's cgroups (`cgroups.py`) attached before the harness starts.

The no-jail backend runs the harness as a plain subprocess; it exists for developing the
harness on machines without namespaces and is never chosen implicitly: only
`get_backend("nojail")` returns it, with a warning.
"""

from __future__ import annotations

from sandbox_cluster.jails.base import (  # re-exported: the package's face
    CAPS,
    DEFAULT_UID_BASE,
    HARNESS_SOURCE,
    JAIL_ENV,
    RUNTIME_DIRS,
    SITE_DIR_NAMES,
    UID_BLOCK,
    UID_BLOCKS,
    UID_LOCK_DIR,
    JailBackend,
    JailEnvelope,
    JailProcess,
    JailStartError,
    JailUnavailable,
    Placement,
    default_python,
)


def _registry() -> dict[str, type[JailBackend]]:
    from sandbox_cluster.jails.bubblewrap import BubblewrapBackend
    from sandbox_cluster.jails.nojail import NoJailBackend
    from sandbox_cluster.jails.nsjail import NsjailBackend

    return {"nsjail": NsjailBackend, "bwrap": BubblewrapBackend, "nojail": NoJailBackend}


PREFERENCE = ("nsjail", "bwrap")
ALIASES = {"bubblewrap": "bwrap", "none": "nojail"}


def unavailable_reason(backend: JailBackend) -> str | None:
    """None when `backend` can start jails here, else why not: its own checks first, then one
    jail started running `print(1)` (probed once per backend object)."""
    if backend._unavailable is False:
        from sandbox_cluster.jails.session import probe_jail

        backend._unavailable = backend._probe() or probe_jail(backend)
    return backend._unavailable


def backend_names() -> list[str]:
    return list(_registry())


def get_backend(name: str | None = None, **options) -> JailBackend:
    """The backend called `name` ("nsjail", "bwrap", "nojail"), or with None the best one that
    runs here (nsjail, else bwrap; never nojail). Raises JailUnavailable saying why."""
    registry = _registry()
    if name is None:
        reasons = []
        for candidate in PREFERENCE:
            backend = registry[candidate](**options)
            reason = unavailable_reason(backend)
            if reason is None:
                return backend
            backend.release()
            reasons.append(f"{candidate}: {reason}")
        raise JailUnavailable("no jail backend runs on this host: " + "; ".join(reasons))
    key = ALIASES.get(name, name)
    if key not in registry:
        raise ValueError(f"unknown jail backend {name!r}; known: {', '.join(registry)}")
    backend = registry[key](**options)
    reason = unavailable_reason(backend)
    if reason is not None:
        backend.release()
        raise JailUnavailable(f"{key}: {reason}")
    return backend


__all__ = [
    "ALIASES",
    "CAPS",
    "DEFAULT_UID_BASE",
    "HARNESS_SOURCE",
    "JAIL_ENV",
    "PREFERENCE",
    "RUNTIME_DIRS",
    "SITE_DIR_NAMES",
    "UID_BLOCK",
    "UID_BLOCKS",
    "UID_LOCK_DIR",
    "JailBackend",
    "JailEnvelope",
    "JailProcess",
    "JailStartError",
    "JailUnavailable",
    "Placement",
    "backend_names",
    "default_python",
    "get_backend",
    "unavailable_reason",
]
