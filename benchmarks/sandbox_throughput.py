"""Trivial-test throughput: LocalPool (warm harness, one jail per batch) vs one `bwrap ...
python3` process per test, measured in the same run on the same pinned core.

    flock /tmp/jaxopt-bench.lock .venv/bin/python benchmarks/sandbox_throughput.py
    # ~30 s; prints one JSON object; target: ratio >= 10

Both sides run the same program (`print(int(input()) + 1)`) on the same inputs and check the
output. The pool (one slot) runs batches of `--batch` tests (one batch = one program's tests,
as for one rollout); the baseline starts a fresh bubblewrap sandbox with the same namespaces
and runtime mounts, and a fresh interpreter, for every test. On both sides the sandboxed work
is pinned to `--core` and the orchestration (pool threads, the baseline's subprocess calls)
is not, as in production. Batches of the two are interleaved so that a change in machine load
hits both. Costs per test are printed too: on VMs where syscalls and page faults are slow,
fork-based isolation loses part of its edge over interpreter start-up.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

from tqdm import tqdm

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails.bubblewrap import BubblewrapBackend
from sandbox_cluster.pool import LocalPool

PROGRAM = "print(int(input()) + 1)"


def machine() -> dict:
    model = next((line.split(":", 1)[1].strip() for line in
                  Path("/proc/cpuinfo").read_text().splitlines()
                  if line.startswith("model name")), platform.processor())
    return {"cpu": model, "cores": os.cpu_count(), "kernel": platform.release(),
            "loadavg_1m": os.getloadavg()[0], "python": sys.version.split()[0]}


def baseline_argv(backend: BubblewrapBackend) -> list[str]:
    argv = [backend.binary, "--unshare-user", "--unshare-pid", "--unshare-net", "--unshare-ipc",
            "--unshare-uts", "--die-with-parent", "--new-session", "--clearenv",
            "--setenv", "LANG", "C.UTF-8"]
    for path, target in backend.runtime_mounts():
        argv += ["--symlink", target, path] if target else ["--ro-bind", path, path]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp", "--chdir", "/tmp"]
    return [*argv, "--", backend.python, "-I", "-c", PROGRAM]


def run_baseline(argv: list[str], tests: list[TestCase], core: int) -> int:
    ok = 0
    for test in tests:
        done = subprocess.run(argv, input=test.input.encode(), capture_output=True, timeout=30,
                              preexec_fn=lambda: os.sched_setaffinity(0, {core}))
        ok += done.returncode == 0 and done.stdout.split() == test.expected.encode().split()
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=400, help="tests per side")
    parser.add_argument("--batch", type=int, default=50, help="tests per pool job")
    parser.add_argument("--backend", default=None, help="pool backend (default: best)")
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()

    bwrap = BubblewrapBackend()
    argv = baseline_argv(bwrap)
    tests = [TestCase(f"{i}\n", f"{i + 1}\n") for i in range(args.tests)]
    batches = [tests[i:i + args.batch] for i in range(0, len(tests), args.batch)]
    limits = Limits(time_s=10)
    with LocalPool(slots=1, backend=args.backend, cores=[args.core]) as pool:
        pool.run(PROGRAM, tests[:2], limits)  # warm page cache, spare jail
        run_baseline(argv, tests[:2], args.core)
        pool_s = base_s = 0.0
        pool_ok = base_ok = 0
        for batch in tqdm(batches, desc="batches", file=sys.stderr):
            start = time.perf_counter()
            results = pool.run(PROGRAM, batch, limits)
            pool_s += time.perf_counter() - start
            pool_ok += sum(r.status is Status.SUCCESS for r in results)
            start = time.perf_counter()
            base_ok += run_baseline(argv, batch, args.core)
            base_s += time.perf_counter() - start
        backend = pool.backend.name
    pool_rate, base_rate = len(tests) / pool_s, len(tests) / base_s
    print(json.dumps({
        "benchmark": "sandbox_throughput",
        "pool_backend": backend, "tests": len(tests), "batch": args.batch, "core": args.core,
        "pool_tests_per_s": round(pool_rate, 1), "baseline_tests_per_s": round(base_rate, 1),
        "pool_ms_per_test": round(1000 / pool_rate, 2),
        "baseline_ms_per_test": round(1000 / base_rate, 2),
        "ratio": round(pool_rate / base_rate, 2), "target_ratio": 10.0,
        "pass": pool_rate / base_rate >= 10.0 and pool_ok == base_ok == len(tests),
        "pool_correct": pool_ok, "baseline_correct": base_ok, "machine": machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
