import ctypes
import os

libc = ctypes.CDLL(None, use_errno=True)
escaped = []
if libc.unshare(0x10000000) == 0:  # CLONE_NEWUSER
    escaped.append("unshare")
if libc.mount(b"none", b"/tmp", b"tmpfs", 0, None) == 0:
    escaped.append("mount")
if libc.syscall(101, 16, 1, 0, 0) == 0:  # ptrace(PTRACE_ATTACH, 1)
    escaped.append("ptrace")
if libc.syscall(425, 8, None) >= 0:  # io_uring_setup
    escaped.append("io_uring")
if libc.chroot(b"/tmp") == 0:
    escaped.append("chroot")
if libc.shmget(0, 4096, 0o1000 | 0o600) >= 0:  # SysV IPC would outlive the test
    escaped.append("shmget")
if libc.mq_open(b"/carry", 0o100 | 2, 0o600, None) >= 0:  # so would a POSIX message queue
    escaped.append("mq_open")
try:
    os.sched_setaffinity(0, range(os.cpu_count() or 1))
    escaped.append("setaffinity")
except OSError:
    pass
if libc.setuid(0) == 0 and os.getuid() == 0:
    escaped.append("setuid0")
print("ESCAPED" if escaped else "blocked", escaped)
raise SystemExit(3)
