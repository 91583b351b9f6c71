"""Test doubles for the builder: a subprocess sandbox and synthetic problems.

`SubprocessSandbox` implements the `sandbox_cluster` client API (`run`, `submit`) with one plain
`python3` process per test: no jail, no pinning, honest statuses and wall durations. Tests only.
It counts calls so resumability tests can check that finished work is not redone.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from sandbox_cluster.api import Limits, Status, TestCase, TestResult

DEFAULT_LIMITS = Limits()


def _tokens_match(out: str, expected: str, tolerance: float | None) -> bool:
    a, b = out.split(), expected.split()
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        if x == y:
            continue
        if tolerance is None:
            return False
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if abs(fx - fy) > tolerance * max(1.0, abs(fx), abs(fy)):
            return False
    return True


class SubprocessSandbox:
    def __init__(self, workers: int = 2):
        self._pool = ThreadPoolExecutor(workers)
        self._lock = threading.Lock()
        self.runs = 0
        self.programs: list[str] = []
        self.fail_next_infra = 0  # inject inconclusive results

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def submit(self, program, tests, limits=DEFAULT_LIMITS, interface="stdio", checker=None,
               float_tolerance=None) -> Future:
        return self._pool.submit(self.run, program, tests, limits, interface, checker,
                                 float_tolerance)

    def run(self, program, tests, limits=DEFAULT_LIMITS, interface="stdio", checker=None,
            float_tolerance=None) -> list[TestResult]:
        with self._lock:
            self.runs += 1
            self.programs.append(program)
            if self.fail_next_infra > 0:
                self.fail_next_infra -= 1
                return [TestResult.infra_error("injected") for _ in tests]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "main.py"
            path.write_text(program)
            return [self._one(path, test, limits, float_tolerance) for test in tests]

    def _one(self, path: Path, test: TestCase, limits: Limits, tolerance) -> TestResult:
        data = test.input.encode() if isinstance(test.input, str) else test.input
        start = time.perf_counter()
        try:
            proc = subprocess.run([sys.executable, "-S", str(path)], input=data,
                                  capture_output=True, timeout=limits.time_s)
        except subprocess.TimeoutExpired:
            return TestResult(Status.TIMEOUT, limits.time_s)
        duration = time.perf_counter() - start
        stderr = proc.stderr.decode(errors="replace")[-2000:]
        if proc.returncode != 0:
            return TestResult(Status.RUNTIME_ERROR, duration, stdout=proc.stdout, stderr=stderr)
        if test.expected is not None:
            expected = test.expected if isinstance(test.expected, str) else test.expected.decode()
            if not _tokens_match(proc.stdout.decode(errors="replace"), expected, tolerance):
                return TestResult(Status.WRONG_ANSWER, duration, stdout=proc.stdout, stderr=stderr)
        return TestResult(Status.SUCCESS, duration, stdout=proc.stdout, stderr=stderr)


# --- synthetic problems (sum of a list) ------------------------------------------------------

SUM_FAST = "import sys\nd=sys.stdin.read().split()\nprint(sum(map(int,d[1:])))\n"
SUM_LOOP = ("n=int(input())\na=list(map(int,input().split()))\ns=0\nfor x in a:\n    s+=x\n"
            "print(s)\n")
SUM_SLOW = ("import sys\nd=sys.stdin.read().split()\na=list(map(int,d[1:]))\ns=0\n"
            "for i in range(len(a)):\n    s+=sum(a[i:i+1])\nprint(s)\n")
SUM_WRONG_BIG = ("import sys\nd=sys.stdin.read().split()\na=list(map(int,d[1:]))\n"
                 "print(sum(a) if len(a) <= 10 else sum(a[:10]))\n")
SUM_WRONG_FIRST = "import sys\nd=sys.stdin.read().split()\nprint(sum(map(int,d[2:])))\n"

SUM_GENERATOR = '''\
def generate(method, rng):
    n = {"edge": rng.choice([1, 2]), "small": rng.randint(1, 5), "sample": rng.randint(5, 30),
         "large": rng.randint(200, 2000)}[method]
    lo = 0 if method == "edge" else -5
    return f"{n}\\n" + " ".join(str(rng.randint(lo, 9)) for _ in range(n)) + "\\n"
'''
CRASHING_GENERATOR = "def generate(method, rng):\n    raise ZeroDivisionError('boom')\n"


def sum_problem_dict(problem_id: str = "sum-001", generator: str = SUM_GENERATOR,
                     correct: tuple[str, ...] = (SUM_FAST, SUM_LOOP, SUM_SLOW),
                     incorrect: tuple[str, ...] = (SUM_WRONG_BIG, SUM_WRONG_FIRST)) -> dict:
    """A problem in our JSON schema: sum of n integers."""
    tests = [("3\n1 2 3\n", "6\n"), ("1\n5\n", "5\n"), ("2\n-1 4\n", "3\n")]
    return {
        "problem_id": problem_id,
        "title": "Sum",
        "statement": "Given n and a list of n integers, print their sum. " * 3,
        "difficulty": "easy",
        "time_limit_s": 5.0,
        "tests": [{"test_id": f"T0/{i:03d}", "kind": "T0", "origin": "original", "input": x,
                   "expected": y} for i, (x, y) in enumerate(tests)],
        "solutions": ([{"solution_id": f"correct_{i}", "code": c, "label": "correct"}
                       for i, c in enumerate(correct)]
                      + [{"solution_id": f"incorrect_{i}", "code": c, "label": "incorrect"}
                         for i, c in enumerate(incorrect)]),
        "generators": [generator],
    }
