# Try to write where a program must not. The input is the host path of a canary file: inside
# the jail that path is on the private /tmp, so writing it must leave the host file unchanged.
import sys

canary = sys.stdin.read().strip()
escaped = []
for path in ["/usr/lib/sandbox_pwned", "/usr/bin/python3", "/etc/passwd", "/root/pwned",
             "/work/pwned", "/pwned", "/proc/sys/kernel/hostname", "/proc/sysrq-trigger",
             "/sys/fs/cgroup/pwned"]:
    try:
        with open(path, "a") as f:
            f.write("pwned\n")
        escaped.append(path)
    except OSError:
        pass
with open(canary, "w") as f:
    f.write("overwritten by the program\n")
print(f"ESCAPED {escaped}" if escaped else "contained")
sys.exit(1)
