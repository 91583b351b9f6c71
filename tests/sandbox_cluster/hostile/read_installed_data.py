# Look for the project's installed data set (expected outputs among it) and packages from
# inside the jail. Input (JSON): "paths", every file the install wrote, by host path; "digests",
# basename -> sha256 of each data file, to recognise a copy anywhere by name and content;
# "modules", the project's packages, to import; "roots", where to walk.
import hashlib
import json
import os
import sys

spec = json.loads(sys.stdin.read())
readable = []
for path in spec["paths"]:
    try:
        with open(path, "rb") as f:
            f.read(1)
        readable.append(path)
    except OSError:
        pass
found = []  # package directories and copies of data files, wherever they are
walked = 0
for root in spec["roots"]:
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [d for d in dirnames
                       if os.path.join(dirpath, d) not in ("/proc", "/sys", "/dev")]
        walked += len(filenames)
        found += [os.path.join(dirpath, d) for d in dirnames if d in spec["modules"]]
        for name in filenames:
            if name not in spec["digests"]:
                continue
            path = os.path.join(dirpath, name)
            try:
                with open(path, "rb") as f:
                    digest = hashlib.sha256(f.read()).hexdigest()
            except OSError:
                continue
            if digest in spec["digests"][name]:
                found.append(path)
imported = []
for module in spec["modules"]:
    try:
        __import__(module)
        imported.append(module)
    except ImportError:
        pass
if readable or found or imported:
    print(f"LEAK {len(readable)} readable, {len(set(found))} found, imported {imported}:",
          sorted(set(readable + found))[:10])
else:
    print(f"nothing visible among {walked} files")
