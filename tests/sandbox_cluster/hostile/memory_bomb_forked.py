# Each process stays under its own RLIMIT_AS; together they exceed the jail's memory cgroup.
import os
import time

for _ in range(12):
    if os.fork() == 0:
        block = bytearray(180 * 2**20)
        for i in range(0, len(block), 4096):
            block[i] = 1
        time.sleep(0.2)
        os._exit(0)
for _ in range(12):
    os.wait()
print(42)
