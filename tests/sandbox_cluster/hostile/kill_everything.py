# SIGKILL everything this uid can reach in the jail; the harness (pid 1 and the job process,
# both another uid) must survive and report the truth: a correct answer.
import contextlib
import os

with contextlib.suppress(OSError):  # 0 when some process was found, even if all refused
    os.kill(-1, 9)
print(42)
