# Input "spawn": leave a daemon behind that writes into the work dir later.
# Input "check": look for anything the previous test left (process or file).
import os
import sys
import time

mode = sys.stdin.read().strip()
if mode == "spawn":
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            while True:
                time.sleep(0.05)
                with open("/tmp/late_marker", "a") as f:
                    f.write("x")
        os._exit(0)
    print("spawned")
else:
    time.sleep(0.3)
    others = [p for p in os.listdir("/proc") if p.isdigit() and int(p) not in (1, os.getppid(), os.getpid())]
    files = os.listdir("/tmp") + os.listdir("/dev/shm")
    print("clean" if not others and not files else f"dirty {others} {files}")
