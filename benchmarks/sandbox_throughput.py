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
hits both. `--rounds` repeats the whole comparison; the figures are the medians over rounds.

Besides wall time, CPU time per test is reported for each side, which a busy machine moves
much less than wall time:
- pool: the slot's cgroup (jail tool, harness, program children: everything on the pinned
  core) + this process during the pool's batches (supervisor threads);
- baseline: every bwrap and interpreter process it starts (`TreeCpu`: this process's cgroup
  minus this process) + this process during the baseline's batches (fork/exec/pipes of
  subprocess.run). Kernel work done elsewhere (namespace teardown runs in kernel workers) is
  in neither figure.
"cpu_ratio" is baseline CPU over pool CPU per test. On VMs where page faults and fork are slow
(~3 us per copy-on-write fault on a Firecracker guest), fork-based isolation loses part of its
edge over interpreter start-up, which is why the harness keeps the pages each test touches
few (see `sandbox_cluster.harness`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from tqdm import tqdm

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails.bubblewrap import BubblewrapBackend
from sandbox_cluster.jails.cgroups import CGROUP_ROOT
from sandbox_cluster.pool import LocalPool

PROGRAM = "print(int(input()) + 1)"
TARGET_RATIO = 10.0


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


class TreeCpu:
    """CPU time of this process and of every process it starts, from a cgroup this process
    moves itself into once at start-up (children inherit it for free; moving each baseline
    process instead would add ~8 ms of cgroup migration to every baseline test). bwrap's pid-1
    monitor and its interpreter are never reaped by this process, so rusage would miss them.
    The pool's jails leave for their slot's group before the harness starts. `cpu_s` is None
    where the host has no writable CPU accounting."""

    def __init__(self) -> None:
        self.group: Path | None = None
        self.usage: Path | None = None
        self.origin: Path | None = None
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            v1 = "cpuacct" in controllers.split(",")
            if v1 or (controllers == "" and (CGROUP_ROOT / "cgroup.controllers").is_file()):
                root = CGROUP_ROOT / "cpuacct" if v1 else CGROUP_ROOT
                self.origin = root / path.lstrip("/")
                self.group = root / f"sandbox_throughput-{os.getpid()}"
                self.usage = self.group / ("cpuacct.usage" if v1 else "cpu.stat")
                break
        if self.group is None:
            return
        for stale in self.group.parent.glob("sandbox_throughput-*"):  # runs that crashed
            if not Path(f"/proc/{stale.name.rsplit('-', 1)[1]}").exists():
                with contextlib.suppress(OSError):
                    stale.rmdir()
        try:
            self.group.mkdir()
            (self.group / "cgroup.procs").write_text(str(os.getpid()))
        except OSError:
            self.group = None

    def cpu_s(self) -> float | None:
        if self.group is None:
            return None
        text = self.usage.read_text()
        if self.usage.name == "cpuacct.usage":
            return int(text) / 1e9
        return int(text.split("usage_usec")[1].split()[0]) / 1e6

    def close(self) -> None:
        if self.group is None:
            return
        (self.origin / "cgroup.procs").write_text(str(os.getpid()))
        for _ in range(100):  # EBUSY until the last baseline process has gone
            try:
                self.group.rmdir()
                return
            except OSError:
                time.sleep(0.05)


@dataclass
class Side:
    """Totals of one side over its batches."""

    tests: int = 0
    correct: int = 0
    wall_s: float = 0.0
    supervisor_cpu_s: float = 0.0  # this process
    sandbox_cpu_s: float | None = 0.0  # the slot's cgroup / the baseline's processes
    rounds: list[dict] = field(default_factory=list)

    def add(self, tests: int, correct: int, wall_s: float, supervisor_s: float,
            sandbox_s: float | None) -> None:
        self.tests += tests
        self.correct += correct
        self.wall_s += wall_s
        self.supervisor_cpu_s += supervisor_s
        self.sandbox_cpu_s = (None if sandbox_s is None or self.sandbox_cpu_s is None
                              else self.sandbox_cpu_s + sandbox_s)

    def per_test_ms(self) -> dict:
        cpu = (None if self.sandbox_cpu_s is None
               else (self.sandbox_cpu_s + self.supervisor_cpu_s) / self.tests * 1e3)
        return {
            "wall_ms": self.wall_s / self.tests * 1e3,
            "cpu_ms": cpu,
            "sandbox_cpu_ms": (None if self.sandbox_cpu_s is None
                               else self.sandbox_cpu_s / self.tests * 1e3),
            "supervisor_cpu_ms": self.supervisor_cpu_s / self.tests * 1e3,
        }


def _delta(before: float | None, after: float | None) -> float | None:
    return None if before is None or after is None else after - before


def run_round(pool: LocalPool, argv: list[str], core: int, tree: TreeCpu,
              batches: list[list[TestCase]], limits: Limits) -> tuple[Side, Side]:
    pool_side, base_side = Side(), Side()
    for batch in batches:
        slot_before = pool.stats().get("slot_cpu_s", [None])[0]
        wall, cpu = time.perf_counter(), time.process_time()
        results = pool.run(PROGRAM, batch, limits)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        pool_side.add(len(batch), sum(r.status is Status.SUCCESS for r in results), wall, cpu,
                      _delta(slot_before, pool.stats().get("slot_cpu_s", [None])[0]))

        tree_before = tree.cpu_s()
        wall, cpu = time.perf_counter(), time.process_time()
        correct = run_baseline(argv, batch, core)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        tree_used = _delta(tree_before, tree.cpu_s())
        base_side.add(len(batch), correct, wall, cpu,
                      None if tree_used is None else tree_used - cpu)
    return pool_side, base_side


def _median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if len(present) == len(values) else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tests", type=int, default=400, help="tests per side and round")
    parser.add_argument("--batch", type=int, default=50, help="tests per pool job")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--backend", default=None, help="pool backend (default: best)")
    parser.add_argument("--core", type=int, default=max(os.sched_getaffinity(0)))
    args = parser.parse_args()

    tree = TreeCpu()  # first: every process started from here on is accounted
    argv = baseline_argv(BubblewrapBackend())
    tests = [TestCase(f"{i}\n", f"{i + 1}\n") for i in range(args.tests)]
    batches = [tests[i:i + args.batch] for i in range(0, len(tests), args.batch)]
    limits = Limits(time_s=10)
    load_before = os.getloadavg()[0]
    rounds = []
    try:
        with LocalPool(slots=1, backend=args.backend, cores=[args.core]) as pool:
            pool.run(PROGRAM, tests[:2], limits)  # warm page cache, spare jail
            run_baseline(argv, tests[:2], args.core)
            for _ in tqdm(range(args.rounds), desc="rounds", file=sys.stderr):
                pool_side, base_side = run_round(pool, argv, args.core, tree, batches, limits)
                rounds.append({"pool": pool_side, "baseline": base_side})
            backend = pool.backend.name
    finally:
        tree.close()
    figures = []
    for sides in rounds:
        pool_ms, base_ms = sides["pool"].per_test_ms(), sides["baseline"].per_test_ms()
        figures.append({
            "pool": pool_ms, "baseline": base_ms,
            "ratio": base_ms["wall_ms"] / pool_ms["wall_ms"],
            "cpu_ratio": (None if pool_ms["cpu_ms"] is None or base_ms["cpu_ms"] is None
                          else base_ms["cpu_ms"] / pool_ms["cpu_ms"]),
        })

    def median_of(side: str, key: str) -> float | None:
        return _median([f[side][key] for f in figures])

    ratio = _median([f["ratio"] for f in figures])
    correct = all(s["pool"].correct == s["baseline"].correct == len(tests) for s in rounds)
    print(json.dumps({
        "benchmark": "sandbox_throughput",
        "pool_backend": backend, "tests_per_round": len(tests), "batch": args.batch,
        "rounds": args.rounds, "core": args.core,
        "pool_tests_per_s": round(1000 / median_of("pool", "wall_ms"), 1),
        "baseline_tests_per_s": round(1000 / median_of("baseline", "wall_ms"), 1),
        "pool_ms_per_test": median_of("pool", "wall_ms"),
        "baseline_ms_per_test": median_of("baseline", "wall_ms"),
        "ratio": ratio, "target_ratio": TARGET_RATIO,
        "ratio_per_round": [round(f["ratio"], 2) for f in figures],
        "cpu_ms_per_test": {
            "pool": median_of("pool", "cpu_ms"),
            "pool_slot": median_of("pool", "sandbox_cpu_ms"),
            "pool_supervisor": median_of("pool", "supervisor_cpu_ms"),
            "baseline": median_of("baseline", "cpu_ms"),
            "baseline_sandboxes": median_of("baseline", "sandbox_cpu_ms"),
            "baseline_supervisor": median_of("baseline", "supervisor_cpu_ms"),
        },
        "cpu_ratio": _median([f["cpu_ratio"] for f in figures]),
        "pass": ratio >= TARGET_RATIO and correct,
        "all_correct": correct,
        "loadavg_1m_before": round(load_before, 2),
        "machine": machine(),
    }, indent=2))


if __name__ == "__main__":
    main()
