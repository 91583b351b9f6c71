# The function-interface twin of scan_memory.py: the arguments are parsed in the child, so the
# address space holds this test's marker only, never another test's (or an earlier job's).
import ctypes
import re


def solve(mark, pad=""):
    ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE
    pattern = re.compile(rb"MARK" + rb"_[0-9a-f]{24}")
    found = set()
    with open("/proc/self/maps") as maps:
        regions = [line.split() for line in maps]
    with open("/proc/self/mem", "rb", 0) as mem:
        for fields in regions:
            start, end = (int(x, 16) for x in fields[0].split("-"))
            if "r" not in fields[1] or fields[-1] in ("[vvar]", "[vsyscall]"):
                continue
            try:
                mem.seek(start)
                found.update(pattern.findall(mem.read(end - start)))
            except (OSError, OverflowError, ValueError):
                continue
    foreign = found - {mark.encode()}
    return [mark, "FOUND" if foreign else "clean"]
