"""A deterministic sandbox double for the loop drivers: a program's verdict is a hash of its text."""

from __future__ import annotations

import zlib
from concurrent.futures import Future

from sandbox_cluster.api import Status, TestResult


class HashSandbox:
    """Success on every test when crc32(program) is even, else wrong answer on every test."""

    def submit(self, program, tests, limits, **options):
        status = Status.SUCCESS if zlib.crc32(program.encode()) % 2 == 0 else Status.WRONG_ANSWER
        future = Future()
        future.set_result([TestResult(status, 0.001, extra={"timing": "measured",
                                                            "node": "embedded"})] * len(tests))
        return future

    def close(self):
        pass
