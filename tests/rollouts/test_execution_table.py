"""Sandbox results -> execution table -> `RecordBatch` as arrays (`rollouts.execution_table`):
the same batch, bit for bit, as the records path (`execute.execution_records` +
`data.execution_records.batch_from_records`, whose layout is tested against record files), with
every status, provenance, padding and reference shape the trainer meets."""

from __future__ import annotations

import numpy as np
import pytest

from jaxopt_rl.data.execution_records import ReferenceDuration, batch_from_records
from jaxopt_rl.rewards.records import INCONCLUSIVE, TIMEOUT
from jaxopt_rl.rollouts.execute import TestSpec, execution_records
from jaxopt_rl.rollouts.execution_table import results_batch
from jaxopt_rl.rollouts.problems import ProblemRun
from sandbox_cluster.api import Limits, Status, TestResult
from sandbox_cluster.fallback import convert_local

KINDS = ("T0", "T+", "TO")
FIELDS = ("status_BT", "duration_BT", "test_mask_BT", "test_kind_BT", "io_chars_BT", "cap_BT",
          "rollout_mask_B", "ref_duration_PTH", "ref_mask_PTH")


def run_of(problem_id: str, num_tests: int, cap: float, references=()) -> ProblemRun:
    specs = tuple(TestSpec(f"{problem_id}/t{i}", KINDS[i % 3], 10 * i + 3)
                  for i in range(num_tests))
    return ProblemRun(problem_id=problem_id, prompt="", tests=(), specs=specs,
                      test_kinds=tuple(s.test_kind for s in specs),
                      limits=Limits(time_s=cap), interface="stdio", float_tolerance=None,
                      references=tuple(references), difficulty="easy")


def random_result(rng: np.random.Generator, cap: float) -> TestResult:
    """Every kind of result the client hands back (fleet, embedded, fallback conversions,
    placeholders without a duration)."""
    pick = int(rng.integers(9))
    seconds = float(rng.uniform(0, cap))
    if pick == 0:
        return TestResult(Status.SUCCESS, seconds, extra={"node": "http://n1", "timing": "fleet"})
    if pick == 1:
        return TestResult(Status.SUCCESS, seconds, extra={"node": "embedded", "timing": "fleet"})
    if pick == 2:
        return TestResult(Status.TIMEOUT, cap, extra={"node": "http://n1", "timing": "fleet"})
    if pick == 3:
        return TestResult(Status.WRONG_ANSWER, seconds, extra={"timing": "measured"})
    if pick == 4:
        return TestResult(Status.INFRA_ERROR, 0.0, extra={"timing": "none"})
    if pick == 5:
        return TestResult(Status.NOT_RUN, 0.0, extra={"timing": "none"})
    if pick == 6:
        return convert_local(TestResult(Status.SUCCESS, seconds), "optimization",
                             Limits(time_s=cap), 2)
    if pick == 7:
        return convert_local(TestResult(Status.SUCCESS, seconds), "correctness",
                             Limits(time_s=cap), 2)
    return TestResult(Status.SUCCESS, seconds)  # no provenance: measured where it ran


def scenario(seed: int, group_size: int):
    rng = np.random.default_rng(seed)
    runs, results_PG = [], []
    for p in range(int(rng.integers(1, 4))):
        num_tests, cap = int(rng.integers(1, 6)), float(rng.choice([2.0, 10.0]))
        references = []
        for h in range(int(rng.integers(0, 4))):
            for t in rng.permutation(num_tests)[: int(rng.integers(1, num_tests + 1))]:
                value = None if rng.random() < 0.2 else float(rng.uniform(0, cap))
                references.append(ReferenceDuration(f"p{p}", f"p{p}/t{t}", f"h{h}", value))
        runs.append(run_of(f"p{p}", num_tests, cap, references))
        rollouts = int(rng.integers(1, group_size + 1))
        results_PG.append([[random_result(rng, cap) for _ in range(num_tests)]
                           for _ in range(rollouts)])
    return runs, results_PG


def records_path(runs, results_PG, group_size, pad_multiple, embedded_is_fleet):
    records, references = [], []
    for run, results_G in zip(runs, results_PG):
        for g, results_T in enumerate(results_G):
            records.extend(execution_records(run.problem_id, str(g), run.specs, results_T,
                                             run.limits.time_s, embedded_is_fleet))
        references.extend(run.references)
    batch, _ = batch_from_records(records, references, pad_multiple=pad_multiple,
                                  group_size=group_size)
    return batch


@pytest.mark.parametrize("seed", range(40))
def test_the_table_batch_equals_the_records_batch_bit_for_bit(seed):
    group_size = 1 + seed % 4
    pad_multiple = (1, 2, 8)[seed % 3]
    embedded_is_fleet = seed % 5 != 0
    runs, results_PG = scenario(seed, group_size)
    want = records_path(runs, results_PG, group_size, pad_multiple, embedded_is_fleet)
    got = results_batch(runs, results_PG, group_size, pad_multiple, embedded_is_fleet)
    for name in FIELDS:
        a, b = np.asarray(getattr(got, name)), np.asarray(getattr(want, name))
        assert a.dtype == b.dtype and a.shape == b.shape, name
        assert a.tobytes() == b.tobytes(), name  # NaNs included: the same bits


def test_durations_follow_status_and_provenance():
    """Hand-written expectations (docs/design/sandbox-timing.md §4): fleet kept, timeout at the cap,
    local or missing durations NaN, padding rollouts without a verdict."""
    run = run_of("p", 4, 5.0)
    results = [TestResult(Status.SUCCESS, 0.25, extra={"node": "http://n", "timing": "fleet"}),
               TestResult(Status.TIMEOUT, 0.5, extra={"node": "http://n", "timing": "fleet"}),
               TestResult(Status.SUCCESS, 0.1, extra={"node": "local", "timing": "fleet"}),
               TestResult(Status.INFRA_ERROR, 0.0, extra={"timing": "none"})]
    batch = results_batch([run], [[results]], group_size=2)
    duration = np.asarray(batch.duration_BT)
    assert duration[0, 0] == np.float32(0.25) and duration[0, 1] == 5.0
    assert np.isnan(duration[0, 2]) and np.isnan(duration[0, 3])
    assert np.asarray(batch.status_BT)[0, 1] == TIMEOUT
    assert (np.asarray(batch.status_BT)[1] == INCONCLUSIVE).all()
    assert np.asarray(batch.rollout_mask_B).tolist() == [True, False]


def test_refuses_what_the_record_layout_refuses():
    run = run_of("p", 1, 2.0)
    with pytest.raises(ValueError, match=r"impossible success duration 3\.0"):
        results_batch([run], [[[TestResult(Status.SUCCESS, 3.0)]]], group_size=1)
    with pytest.raises(ValueError, match="more than group_size=1"):
        results_batch([run], [[[TestResult(Status.SUCCESS, 1.0)]] * 2], group_size=1)
    with pytest.raises(ValueError, match="2 results for 1 tests"):
        results_batch([run], [[[TestResult(Status.SUCCESS, 1.0)] * 2]], group_size=1)
