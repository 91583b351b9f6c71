"""The committed DMC-Optim-mini build: its shape, and that rebuilding reproduces it.

The rebuild runs two problems of `configs/data/mini.yaml` through the builder in the real
(jailed) embedded sandbox and compares them with the committed artifact: tests and expected
outputs must be identical, statuses identical, durations close (a loose bound: CI machines are
noisy; the closing measurements of the full rebuild are in docs/guides/data.md).
"""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow.parquet as pq
import pytest

from jaxopt_rl.config import load_config
from jaxopt_rl.data.builder import BuildConfig, build
from jaxopt_rl.data.mini import MINI_CONFIG, load_mini, mini_built_dir, mini_problem_ids
from jaxopt_rl.rewards.records import TEST_KINDS

REBUILT_PROBLEMS = ("mini-022", "mini-027")  # fast ones: both build in ~15 s on 2 cores


def _problem_stats(root) -> dict[str, dict]:
    lines = (root / "problem_stats.jsonl").read_text().splitlines()
    return {row["problem_id"]: row for row in map(json.loads, lines)}


def test_committed_artifact_is_complete_small_and_mostly_filterable():
    root = mini_built_dir()
    # materialized/ is the git-ignored cache of regenerated tests a demo run leaves behind
    size = sum(p.stat().st_size for p in root.rglob("*")
               if p.is_file() and "materialized" not in p.relative_to(root).parts)
    assert size <= 20 * 2**20, f"the committed build is {size / 2**20:.1f} MiB (limit 20)"
    dataset = load_mini()
    assert sorted(dataset.problem_ids()) == mini_problem_ids()
    assert len(dataset.problem_ids("train")) + len(dataset.problem_ids("test")) == 30
    stages = [row["stage"] for row in dataset.funnel()]
    assert stages[0] == "00_load" and "13_filterability" in stages
    stats = _problem_stats(root)
    filterable = [s["filterability"]["duration_filterable"] for s in stats.values()]
    assert np.mean(filterable) >= 0.6
    for problem_id in dataset.problem_ids():
        times = dataset.reference_times(problem_id)
        timed_T = np.isin(times.test_kind_T, [TEST_KINDS.index("T0"), TEST_KINDS.index("TO")])
        assert timed_T.any() and times.mask_TH[timed_T].any(axis=1).all(), problem_id


@pytest.mark.slow
def test_rebuilding_two_problems_reproduces_the_committed_artifact(tmp_path):
    config = load_config(BuildConfig, MINI_CONFIG)
    config = dataclasses.replace(
        config,
        output_dir=str(tmp_path / "built"),
        work_dir=str(tmp_path / "work"),
        source=dataclasses.replace(config.source, problem_ids=REBUILT_PROBLEMS),
        # The minimum of three runs (the sandbox's repeat aggregate) sheds the waits for a core
        # that a loaded 2-core CI run adds: with one run, the other xdist worker's load pushed
        # the spread below to 0.471 (bound 0.470) while it is 0.03 on a quiet machine.
        durations=dataclasses.replace(config.durations, repeats=3),
    )
    report = build(config)
    assert not report.rejections
    committed, rebuilt = mini_built_dir(), tmp_path / "built"

    def rows_of(root, name, key):
        rows = pq.read_table(root / name).to_pylist()
        rows = [row for row in rows if row["problem_id"] in REBUILT_PROBLEMS]
        return {tuple(row[k] for k in key): row for row in rows}

    test_key = ("problem_id", "test_id")
    committed_tests = rows_of(committed, "tests.parquet", test_key)
    assert committed_tests
    assert rows_of(rebuilt, "tests.parquet", test_key) == committed_tests

    duration_key = ("problem_id", "test_id", "solution_id")
    committed_times = rows_of(committed, "durations.parquet", duration_key)
    rebuilt_times = rows_of(rebuilt, "durations.parquet", duration_key)
    assert committed_times and rebuilt_times.keys() == committed_times.keys()
    log_ratios = []
    for key, row in committed_times.items():
        again = rebuilt_times[key]
        assert again["status"] == row["status"], key
        if row["status"] == "success" and row["duration_s"] >= 0.01:
            log_ratios.append(np.log(again["duration_s"] / row["duration_s"]))
    assert len(log_ratios) >= 20
    # Reproducible up to one machine-speed factor (what calibration corrects): a host 2.6x
    # slower than the one that built the artifact (seen on this VM, same code) moves every
    # duration alike. What must hold is the spread around that factor: quiet-machine median
    # |deviation| 0.03; a noisy box stays well below the bound.
    log_ratios = np.asarray(log_ratios)
    speed = np.median(log_ratios)
    spread = np.median(np.abs(log_ratios - speed))
    assert spread < np.log(1.6), (spread, speed)
    committed_stats, rebuilt_stats = _problem_stats(committed), _problem_stats(rebuilt)
    for problem_id in REBUILT_PROBLEMS:
        assert (committed_stats[problem_id]["filterability"]["duration_filterable"]
                == rebuilt_stats[problem_id]["filterability"]["duration_filterable"])
