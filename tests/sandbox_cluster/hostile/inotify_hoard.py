# Hold as many inotify instances as the kernel gives: on a shared user count they would
# exhaust the host's max_user_instances while the program runs.
import ctypes

libc = ctypes.CDLL(None, use_errno=True)
held = []
for _ in range(100_000):
    fd = libc.inotify_init1(0)
    if fd < 0:
        break
    held.append(fd)
print("refused" if not held else f"ESCAPED held {len(held)}")
raise SystemExit(1)
