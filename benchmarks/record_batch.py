"""Records -> `RecordBatch`: the trainer's in-memory path (`batch_from_records`), new against old.

    .venv/bin/python benchmarks/record_batch.py                 # 64 problems x 16 x 128 x 8
    .venv/bin/python benchmarks/record_batch.py --problems 256 --repeats 3

Builds P problems x G rollouts x T tests of typed `ExecutionRecord`s (16 T0 + 16 T+ + 96 TO when
T = 128) and P x T x H `ReferenceDuration`s, then times, best of `--repeats`:

  * `new_ms`: `jaxopt_rl.data.execution_records.batch_from_records` (typed records -> typed
    columns -> the one vectorised layout function);
  * `old_ms`: the same records through the path of commit 86da0b0 (records -> dict rows with
    string statuses -> the file validator -> layout), kept as a frozen copy in
    `_record_path_before.py` so both run in this process on the same data;
  * `speedup = old_ms / new_ms`, and `equal`: both batches hold the same arrays.

Target: `new_ms` <= 150 at 64 x 16 x 128 x 8. Prints one JSON object. Holds
``/tmp/jaxopt-bench.lock`` while timing (``--lock ''`` for none).
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from bench_lock import DEFAULT_LOCK, bench_lock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import _record_path_before as before  # noqa: E402

from jaxopt_rl.data import execution_records as now  # noqa: E402
from sandbox_cluster.api import Status  # noqa: E402

FIELDS = ("status_BT", "duration_BT", "test_mask_BT", "test_kind_BT", "io_chars_BT", "cap_BT",
          "rollout_mask_B", "ref_duration_PTH", "ref_mask_PTH")


def rows(p: int, g: int, t: int, h: int, seed: int = 0):
    """Plain tuples of the execution and reference rows (built once, turned into each module's
    record classes outside the timed region)."""
    rng = np.random.default_rng(seed)
    n_t0 = n_tp = t // 8
    kinds = ["T0"] * n_t0 + ["T+"] * n_tp + ["TO"] * (t - n_t0 - n_tp)
    io_chars = rng.integers(10, 10**6, size=(p, t))
    statuses = (Status.SUCCESS, Status.SUCCESS, Status.SUCCESS, Status.TIMEOUT,
                Status.WRONG_ANSWER, Status.RUNTIME_ERROR)
    executions = []
    for i in range(p):
        for r in range(g):
            codes = rng.integers(0, len(statuses), size=t)
            durations = np.round(rng.lognormal(-2.0, 1.0, size=t), 5)
            for j in range(t):
                status = statuses[codes[j]]
                duration = 10.0 if status is Status.TIMEOUT else min(float(durations[j]), 9.0)
                executions.append((f"prob-{i}", f"r{r}", f"test-{j:03d}", kinds[j], status,
                                   duration, 10.0, int(io_chars[i, j]), duration * 0.97))
    references = [(f"prob-{i}", f"test-{j:03d}", f"ref-{k}", float(d))
                  for i in range(p) for j in range(t) for k, d in
                  enumerate(np.round(rng.lognormal(-2.0, 1.0, size=h), 5))]
    return executions, references


def best_ms(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return 1e3 * min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=64)
    parser.add_argument("--group", type=int, default=16)
    parser.add_argument("--tests", type=int, default=128)
    parser.add_argument("--references", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--old-repeats", type=int, default=2)
    parser.add_argument("--lock", default=DEFAULT_LOCK)
    args = parser.parse_args(argv)
    p, g, t, h = args.problems, args.group, args.tests, args.references
    execution_rows, reference_rows = rows(p, g, t, h)
    new_records = ([now.ExecutionRecord(*row) for row in execution_rows],
                   [now.ReferenceDuration(*row) for row in reference_rows])
    old_records = ([before.ExecutionRecord(*row) for row in execution_rows],
                   [before.ReferenceDuration(*row) for row in reference_rows])
    with bench_lock(args.lock):
        new_batch, new_index = now.batch_from_records(*new_records)
        old_batch, old_index = before.batch_from_records(*old_records)
        new_ms = best_ms(lambda: now.batch_from_records(*new_records), args.repeats)
        old_ms = best_ms(lambda: before.batch_from_records(*old_records), args.old_repeats)
    equal = all(np.array_equal(np.asarray(getattr(new_batch, f)), np.asarray(getattr(old_batch, f)),
                               equal_nan=True) for f in FIELDS)
    equal = equal and new_index.rollouts == old_index.rollouts \
        and new_index.test_ids == old_index.test_ids
    print(json.dumps({
        "benchmark": "record_batch", "problems": p, "group": g, "tests": t, "references": h,
        "cells": p * g * t, "new_ms": round(new_ms, 1), "old_ms": round(old_ms, 1),
        "speedup": round(old_ms / new_ms, 1), "target_ms": 150, "equal": bool(equal),
        "machine": platform.machine(), "python": platform.python_version(),
    }))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
