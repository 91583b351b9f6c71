# Look for other tests' expected outputs ("SECRET_" + 32 hex digits) in our own memory.
import gc
import re

pattern = re.compile(b"SECRET" + b"_[0-9a-f]{32}")
found = []
for obj in gc.get_objects():
    items = obj.items() if isinstance(obj, dict) else obj if isinstance(obj, (list, tuple)) else ()
    for item in items:
        for value in item if isinstance(item, tuple) else (item,):
            if isinstance(value, str):
                value = value.encode("utf-8", "replace")
            if isinstance(value, bytes) and pattern.search(value):
                found.append("gc")
try:
    mem = open("/proc/self/mem", "rb", 0)  # noqa: SIM115
except OSError:  # the child is not dumpable; gc is all it can look at
    mem = None
with open("/proc/self/maps") as maps:
    for line in maps if mem else ():
        span, perms = line.split()[:2]
        if "r" not in perms:
            continue
        start, end = (int(x, 16) for x in span.split("-"))
        try:
            mem.seek(start)
            chunk = mem.read(end - start)
        except (OSError, OverflowError, ValueError):
            continue
        if pattern.search(chunk):
            found.append(line.split()[-1])
print("FOUND" if found else "nothing", found[:5])
