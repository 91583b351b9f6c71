import os
import signal

os.killpg(os.getpgid(0), signal.SIGKILL)
print(42)
