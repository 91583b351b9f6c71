"""What lies inside a program's timed window (issue 16): not the copy of its stdin. A trivial
program on 48 MB of input must time like the same program on none; the bound is a factor of the
copy's own cost measured here, not an absolute number of seconds."""

from __future__ import annotations

import os
import time

import pytest

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import JailUnavailable
from sandbox_cluster.pool import LocalPool

BIG = "7\n" * (24 * 1024 * 1024)  # 48 MB
LIMITS = Limits(time_s=10.0, memory_mb=1024)


@pytest.fixture(scope="module", params=["nsjail", "bwrap"])
def pool(request):
    try:
        pool = LocalPool(backend=request.param, slots=1, cores=[max(os.sched_getaffinity(0))])
    except JailUnavailable as exc:
        pytest.skip(f"{request.param} cannot run here: {exc}")
    yield pool
    pool.close()


def best_of(fn, n: int = 3) -> float:
    return min(fn() for _ in range(n))


def copy_cost_s() -> float:
    """What writing the input into a memfd costs here (what a misplaced clock would add)."""
    data = BIG.encode()

    def once():
        fd = os.memfd_create("probe", os.MFD_CLOEXEC)
        try:
            start = time.perf_counter()
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
            return time.perf_counter() - start
        finally:
            os.close(fd)

    return best_of(once)


def test_stdin_copy_is_outside_the_timed_window(pool: LocalPool) -> None:
    def duration(stdin: str) -> float:
        result = pool.run("pass", [TestCase(stdin, None)], LIMITS)[0]
        assert result.status is Status.SUCCESS
        return result.duration_s

    small = best_of(lambda: duration(""))
    big = best_of(lambda: duration(BIG))
    # a factor of quantities measured in this run: half the copy, plus the empty run itself
    assert big - small < 0.5 * copy_cost_s() + small, (big, small)
