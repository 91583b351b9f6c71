"""The committed DMC-Optim-mini build: its shape, and that rebuilding reproduces it.

The rebuild runs two problems of `configs/data/mini.yaml` through the builder in the real
(jailed) embedded sandbox and compares them with the committed artifact: tests and expected
outputs must be identical, statuses identical, durations close (a loose bound: CI machines are
noisy; the closing measurements of the full rebuild are in the README).
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
    size = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
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
    )
    report = build(config)
    assert not report.rejections
    committed, rebuilt = mini_built_dir(), tmp_path / "built"

    def tests_of(root):
        table = pq.read_table(root / "tests.parquet").to_pandas()
        table = table[table.problem_id.isin(REBUILT_PROBLEMS)]
        return table.sort_values(["problem_id", "test_id"]).reset_index(drop=True)

    committed_tests, rebuilt_tests = tests_of(committed), tests_of(rebuilt)
    assert len(rebuilt_tests) > 0
    assert committed_tests.equals(rebuilt_tests)

    def durations_of(root):
        table = pq.read_table(root / "durations.parquet").to_pandas()
        return table[table.problem_id.isin(REBUILT_PROBLEMS)]

    keys = ["problem_id", "test_id", "solution_id"]
    pairs = durations_of(committed).merge(durations_of(rebuilt), on=keys, suffixes=("_c", "_r"))
    assert len(pairs) == len(durations_of(committed)) > 0
    assert (pairs.status_c == pairs.status_r).all()
    timed = pairs[(pairs.status_c == "success") & (pairs.duration_s_c >= 0.01)]
    assert len(timed) >= 20
    log_ratio = np.abs(np.log(timed.duration_s_r.to_numpy() / timed.duration_s_c.to_numpy()))
    # Measured on a quiet 2-core machine: median 0.03; a busy CI box may double its times.
    assert np.median(log_ratio) < np.log(2.0), np.median(log_ratio)
    committed_stats, rebuilt_stats = _problem_stats(committed), _problem_stats(rebuilt)
    for problem_id in REBUILT_PROBLEMS:
        assert (committed_stats[problem_id]["filterability"]["duration_filterable"]
                == rebuilt_stats[problem_id]["filterability"]["duration_filterable"])
