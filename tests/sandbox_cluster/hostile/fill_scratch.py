# Input "fill <dir>": write until the disk is full. Input "check": both scratch dirs are empty.
import os
import sys

words = sys.stdin.read().split()
if words[0] == "fill":  # many files, each below RLIMIT_FSIZE, until the tmpfs is full
    for index in range(10**6):
        with open(os.path.join(words[1], f"filler{index}"), "wb") as f:
            f.write(b"\0" * 2**19)
print("clean" if not os.listdir("/tmp") and not os.listdir("/dev/shm") else "dirty")
