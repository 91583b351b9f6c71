"""The seccomp-bpf filter the harness installs in itself, and so in every program child.

A deny list, not an allow list: CPython and the programs it runs use a wide and
version-dependent set of syscalls, and the jail (namespaces, uid separation, no capabilities,
NO_NEW_PRIVS, rlimits, cgroups) already carries the isolation. The filter removes the kernel
surface a program has no business touching and the calls that could reach the harness or the
timing: ptrace and cross-process memory access, pidfd_getfd, namespace creation (clone with
CLONE_NEW* flags; clone3 answers ENOSYS so libc falls back to clone, whose flags can be
inspected), mounts, sched_setaffinity (leaving the pinned core), prlimit64 on another process,
SysV IPC objects and POSIX message queues (they would outlive the test that made them and
carry state to the next),
io_uring (it would bypass the filter), bpf, perf_event_open, userfaultfd, keyrings, module
loading, clock setting, inotify instances (counted per user across user namespaces, so a
program holding them exhausts the host's max_user_instances) and similar; sockets only of
the families in `SOCKET_FAMILIES` (no AF_VSOCK: vsock is not network-namespaced). The harness needs none of these after it has pinned
itself, so it loads the filter once per jail and every forked child inherits it. Denied calls fail with EPERM so the program sees an
ordinary error; a syscall from a foreign ABI (x32, or a non-native arch) kills the process.

Only x86_64 and aarch64 have tables; elsewhere `build_filter` returns None and the pool logs
the missing feature once (degraded mode). The numbers are checked against the kernel headers
in tests/sandbox_cluster/test_jails.py when those headers are installed.
"""

from __future__ import annotations

import errno
import functools
import platform
import struct

# Classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h).
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06
RET_KILL_PROCESS = 0x80000000
RET_ALLOW = 0x7FFF0000
RET_ERRNO = 0x00050000

# struct seccomp_data: int nr; __u32 arch; __u64 instruction_pointer; __u64 args[6].
_OFFSET_NR = 0
_OFFSET_ARCH = 4


def _arg_low(index: int) -> int:
    return 16 + 8 * index  # little-endian: the low 32 bits come first


CLONE_NEW_FLAGS = 0x7E020000  # NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET

# AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: the socket families a program may open.
SOCKET_FAMILIES = (1, 2, 10, 16)

AUDIT_ARCH = {"x86_64": 0xC000003E, "aarch64": 0xC00000B7}

# Denied outright (EPERM). Names are the kernel's __NR_ names.
DENIED = (
    "ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "kcmp",
    "process_madvise", "sched_setaffinity", "setns", "unshare", "mount", "umount2",
    "pivot_root", "chroot", "open_tree", "move_mount", "fsopen", "fsconfig", "fsmount",
    "fspick", "mount_setattr", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "acct", "quotactl", "open_by_handle_at", "name_to_handle_at", "syslog",
    "personality", "settimeofday", "clock_settime", "adjtimex", "clock_adjtime",
    "fanotify_init", "move_pages", "migrate_pages", "shmget", "semget", "msgget", "mq_open",
    "inotify_init1",
)
X86_ONLY_DENIED = ("iopl", "ioperm", "modify_ldt", "lookup_dcookie", "vhangup", "inotify_init")

SYSCALLS = {
    "x86_64": {
        "ptrace": 101, "process_vm_readv": 310, "process_vm_writev": 311, "pidfd_getfd": 438,
        "kcmp": 312, "process_madvise": 440, "sched_setaffinity": 203, "setns": 308,
        "unshare": 272, "mount": 165, "umount2": 166, "pivot_root": 155, "chroot": 161,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "keyctl": 250, "add_key": 248,
        "request_key": 249, "bpf": 321, "perf_event_open": 298, "userfaultfd": 323,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "kexec_load": 246, "kexec_file_load": 320, "init_module": 175, "finit_module": 313,
        "delete_module": 176, "reboot": 169, "swapon": 167, "swapoff": 168, "acct": 163,
        "quotactl": 179, "open_by_handle_at": 304, "name_to_handle_at": 303, "syslog": 103,
        "personality": 135, "settimeofday": 164, "clock_settime": 227, "adjtimex": 159,
        "clock_adjtime": 305, "fanotify_init": 300, "move_pages": 279, "migrate_pages": 256,
        "iopl": 172, "ioperm": 173, "modify_ldt": 154, "lookup_dcookie": 212, "vhangup": 153,
        "shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240, "clone": 56, "clone3": 435,
        "prlimit64": 302, "inotify_init": 253, "inotify_init1": 294, "socket": 41,
        "socketpair": 53,
    },
    "aarch64": {
        "ptrace": 117, "process_vm_readv": 270, "process_vm_writev": 271, "pidfd_getfd": 438,
        "kcmp": 272, "process_madvise": 440, "sched_setaffinity": 122, "setns": 268,
        "unshare": 97, "mount": 40, "umount2": 39, "pivot_root": 41, "chroot": 51,
        "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432,
        "fspick": 433, "mount_setattr": 442, "keyctl": 219, "add_key": 217,
        "request_key": 218, "bpf": 280, "perf_event_open": 241, "userfaultfd": 282,
        "io_uring_setup": 425, "io_uring_enter": 426, "io_uring_register": 427,
        "kexec_load": 104, "kexec_file_load": 294, "init_module": 105, "finit_module": 273,
        "delete_module": 106, "reboot": 142, "swapon": 224, "swapoff": 225, "acct": 89,
        "quotactl": 60, "open_by_handle_at": 265, "name_to_handle_at": 264, "syslog": 116,
        "personality": 92, "settimeofday": 170, "clock_settime": 112, "adjtimex": 171,
        "clock_adjtime": 266, "fanotify_init": 262, "move_pages": 239, "migrate_pages": 238,
        "shmget": 194, "semget": 190, "msgget": 186, "mq_open": 180, "clone": 220, "clone3": 435,
        "prlimit64": 261, "inotify_init1": 26, "socket": 198, "socketpair": 199,
    },
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("<HBBI", code, jt, jf, k)


@functools.cache
def build_filter(arch: str | None = None) -> bytes | None:
    """The filter program as bytes (an array of struct sock_filter) for `arch` (default: this
    machine), or None where no syscall table is known."""
    arch = arch or platform.machine()
    if arch not in SYSCALLS:
        return None
    table = SYSCALLS[arch]
    eperm = RET_ERRNO | errno.EPERM
    denied = DENIED + (X86_ONLY_DENIED if arch == "x86_64" else ())
    prog = [
        _insn(_LD_W_ABS, 0, 0, _OFFSET_ARCH),
        _insn(_JEQ_K, 1, 0, AUDIT_ARCH[arch]),
        _insn(_RET_K, 0, 0, RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, _OFFSET_NR),
    ]
    if arch == "x86_64":  # the x32 ABI shares the arch value; its numbers have bit 30 set
        prog += [_insn(_JGE_K, 0, 1, 0x40000000), _insn(_RET_K, 0, 0, RET_KILL_PROCESS)]
    for name in denied:
        prog += [_insn(_JEQ_K, 0, 1, table[name]), _insn(_RET_K, 0, 0, eperm)]
    prog += [_insn(_JEQ_K, 0, 1, table["clone3"]),
             _insn(_RET_K, 0, 0, RET_ERRNO | errno.ENOSYS)]
    # clone(flags, ...): refuse any CLONE_NEW* flag (threads and plain forks pass).
    prog += [
        _insn(_JEQ_K, 0, 4, table["clone"]),
        _insn(_LD_W_ABS, 0, 0, _arg_low(0)),
        _insn(_JSET_K, 0, 1, CLONE_NEW_FLAGS),
        _insn(_RET_K, 0, 0, eperm),
        _insn(_RET_K, 0, 0, RET_ALLOW),
    ]
    # prlimit64(pid, ...): only pid 0 (this process) may be read or changed. Both 32-bit
    # halves of the pid argument must be zero.
    prog += [
        _insn(_JEQ_K, 0, 5, table["prlimit64"]),
        _insn(_LD_W_ABS, 0, 0, _arg_low(0)),
        _insn(_JEQ_K, 0, 2, 0),
        _insn(_LD_W_ABS, 0, 0, _arg_low(0) + 4),
        _insn(_JEQ_K, 1, 0, 0),
        _insn(_RET_K, 0, 0, eperm),
    ]
    # socket(domain, ...) and socketpair(domain, ...): only the families a program may need
    # (loopback TCP/UDP, Unix sockets, and netlink, which glibc's getaddrinfo asks); every
    # other one answers EAFNOSUPPORT. AF_VSOCK above all: it is not network-namespaced, so a
    # bound vsock port would be the host's.
    for call in ("socket", "socketpair"):
        prog += [_insn(_JEQ_K, 0, 7, table[call]), _insn(_LD_W_ABS, 0, 0, _arg_low(0))]
        prog += [_insn(_JEQ_K, 4 - k, 0, family) for k, family in enumerate(SOCKET_FAMILIES)]
        prog += [_insn(_RET_K, 0, 0, RET_ERRNO | errno.EAFNOSUPPORT),
                 _insn(_RET_K, 0, 0, RET_ALLOW)]
    prog.append(_insn(_RET_K, 0, 0, RET_ALLOW))
    return b"".join(prog)
