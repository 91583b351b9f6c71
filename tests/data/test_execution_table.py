"""The execution table (`data.execution_table`): one provenance vocabulary, the one
status-and-provenance rule for a duration, and the only `RecordBatch(...)` of the library."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from jaxopt_rl.data.execution_table import (
    TIMING_CODE,
    ExecutionTable,
    rankable,
    record_batch,
    timed_duration,
    timing_code,
)
from jaxopt_rl.rewards.records import FAILURE, INCONCLUSIVE, SUCCESS, TIMEOUT
from sandbox_cluster.api import TIMINGS

ROOT = Path(__file__).resolve().parents[2]


def test_the_vocabulary_is_the_sandboxs_and_reads_old_and_absent_words_as_fleet():
    assert tuple(TIMING_CODE) == TIMINGS == ("fleet", "cap", "local", "none")
    assert timing_code(None) == timing_code("measured") == timing_code("fleet") == 0
    assert [timing_code(w) for w in ("cap", "local", "none")] == [1, 2, 3]
    assert timing_code("none: RuntimeError") == -1


def test_the_rule_by_status_and_provenance():
    # (status, duration, cap, provenance) -> expected seconds, from docs/design/sandbox-timing.md §4
    cases = [
        (SUCCESS, 0.3, 5.0, "fleet", 0.3),
        (SUCCESS, 0.3, 5.0, "local", np.nan),
        (SUCCESS, 0.3, 5.0, "none", np.nan),
        (SUCCESS, 0.3, 5.0, "cap", np.nan),  # a cap stands for a timeout, never a success
        (TIMEOUT, 0.002, 5.0, "fleet", 5.0),  # recorded below its cap: still at the cap
        (TIMEOUT, 0.0, 5.0, "none", 5.0),
        (TIMEOUT, 7.0, 5.0, "cap", 5.0),
        (FAILURE, 0.4, 5.0, "fleet", 0.4),
        (FAILURE, 0.0, 5.0, "none", np.nan),
        (INCONCLUSIVE, 0.0, 5.0, "none", np.nan),
    ]
    status, duration, cap, timing, want = (np.array(c) for c in zip(*cases))
    got = timed_duration(status, duration.astype(float), cap.astype(float),
                         np.array([TIMING_CODE[w] for w in timing]))
    np.testing.assert_array_equal(got, want.astype(float))
    assert rankable(status, got).tolist() == [True, False, False, False, True, True, True,
                                              False, False, False]
    assert not rankable(np.array([SUCCESS]), np.array([-0.1]))[0]


def test_record_batch_repeats_each_problems_tests_over_its_group():
    p, g, t = 2, 3, 2
    table = ExecutionTable(
        status_PGT=np.arange(p * g * t, dtype=np.int8).reshape(p, g, t),
        duration_PGT=np.arange(p * g * t, dtype=np.float32).reshape(p, g, t),
        rollout_mask_PG=np.array([[1, 1, 0], [1, 0, 0]], bool),
        test_mask_PT=np.array([[1, 1], [1, 0]], bool),
        test_kind_PT=np.array([[0, 2], [1, 0]], np.int8),
        io_chars_PT=np.array([[5, 6], [7, 0]], np.int32),
        cap_PT=np.array([[1.0, 2.0], [3.0, 0.0]], np.float32))
    refs = np.zeros((p, t, 1), np.float32), np.zeros((p, t, 1), bool)
    batch = record_batch(table, *refs)
    assert np.asarray(batch.status_BT)[4].tolist() == [8, 9]  # problem 1, rollout 1
    assert np.asarray(batch.cap_BT)[:, 0].tolist() == [1.0, 1.0, 1.0, 3.0, 3.0, 3.0]
    assert np.asarray(batch.test_kind_BT)[3:].tolist() == [[1, 0]] * 3
    assert np.asarray(batch.rollout_mask_B).tolist() == [True, True, False, True, False, False]
    batch.validate()


def test_one_record_batch_constructor_in_the_library():
    calls = []
    for path in sorted((ROOT / "jaxopt_rl").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                name = getattr(node.func, "id", getattr(node.func, "attr", None))
                if name == "RecordBatch":
                    calls.append(str(path.relative_to(ROOT)))
    assert calls == ["jaxopt_rl/data/execution_table.py"]
