# Timing forgery across repeats: leave the answer on stderr (and in our own memory), and on a
# later repeat look for it in /proc/self/mem and skip the work. Every repeat must do the work:
# the reported minimum duration must not drop below the real cost.
import ctypes
import re
import sys
import time

n = int(sys.stdin.read())
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
pattern = re.compile(rb"ANSWER" + rb"=(\d+);")
answer = None
with open("/proc/self/maps") as maps:
    regions = [line.split() for line in maps]
with open("/proc/self/mem", "rb", 0) as mem:
    for fields in regions:
        start, end = (int(x, 16) for x in fields[0].split("-"))
        if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]"):
            continue
        try:
            mem.seek(start)
            hit = pattern.search(mem.read(end - start))
        except (OSError, OverflowError, ValueError):
            continue
        if hit:
            answer = int(hit.group(1))
            break
if answer is None:
    deadline = time.monotonic() + 0.4  # the real cost of the answer
    while time.monotonic() < deadline:
        pass
    answer = n * 2
print(answer)
print(f"ANSWER={answer};", file=sys.stderr)
