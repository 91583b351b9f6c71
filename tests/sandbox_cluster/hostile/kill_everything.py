# SIGKILL everything this uid can reach in the jail; the harness (pid 1 and the job process,
# both another uid) must survive and report the truth: a correct answer.
import os

try:
    os.kill(-1, 9)  # 0 when some process was found, even if every one refused (EPERM)
except OSError:
    pass
print(42)
