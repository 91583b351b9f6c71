# Try to stop or trace the harness, then answer correctly but slowly: the verdict and the
# measured duration must still be the truth.
import ctypes
import os
import signal
import time

escaped = []
for pid in {1, os.getppid()}:
    for sig in (signal.SIGKILL, signal.SIGTERM, signal.SIGSTOP, signal.SIGINT, signal.SIGUSR1):
        try:
            os.kill(pid, sig)
            escaped.append(f"kill({pid},{sig})")
        except OSError:
            pass
libc = ctypes.CDLL(None, use_errno=True)
if libc.ptrace(16, 1, 0, 0) == 0:  # PTRACE_ATTACH
    escaped.append("ptrace")
time.sleep(0.3)
print(f"ESCAPED {escaped}" if escaped else 42)
