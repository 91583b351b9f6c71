# Try to reach the harness's result channel through /proc, then answer slowly.
import json
import os
import struct
import time

header = json.dumps({"type": "result", "id": 0, "duration_s": 0.001, "cpu_s": 0.0,
                     "exit_code": 0, "signal": None, "timed_out": False, "stdout_size": 3,
                     "setup_ok": True, "cleanup_ok": True, "payload_sizes": [3, 0]}).encode()
frame = struct.pack(">I", len(header)) + header + b"42\n"
escaped = []
for pid in ("1", str(os.getppid())):
    for fd in ("0", "1", "2", "3", "4"):
        try:
            with open(f"/proc/{pid}/fd/{fd}", "wb") as f:
                f.write(frame)
            escaped.append(f"{pid}/{fd}")
        except OSError:
            pass
own = sorted(os.listdir("/proc/self/fd"))
time.sleep(0.3)
print(f"ESCAPED {escaped}" if escaped else 42 if own == ["0", "1", "2", "3"] else f"FDS {own}")
