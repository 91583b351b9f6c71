"""The lock that keeps benchmarks on a shared machine from timing each other's load.

Scripts that hold it themselves take ``--lock PATH`` ('' for none); others are run under
``flock /tmp/jaxopt-bench.lock ...``, which takes the same lock.
"""

from __future__ import annotations

import contextlib
import fcntl

DEFAULT_LOCK = "/tmp/jaxopt-bench.lock"


@contextlib.contextmanager
def bench_lock(path: str | None):
    """Hold an exclusive `flock` on `path` for the duration (no lock when `path` is empty)."""
    if not path:
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)
