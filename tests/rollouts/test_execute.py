"""Sandbox results -> typed records: provenance, cap, kind and input size are kept; only fleet
durations reach the batch (docs/design/sandbox-timing.md §1.15, §4)."""

import numpy as np
import pytest

from jaxopt_rl.data.execution_records import ReferenceDuration, batch_from_records
from jaxopt_rl.rewards import records
from jaxopt_rl.rollouts.execute import TestSpec, execution_record, execution_records, timing_of
from sandbox_cluster.api import Limits, Status, TestResult
from sandbox_cluster.fallback import convert_local


def fleet(status, duration, node="http://node-1:8000"):
    return TestResult(status, duration, cpu_s=duration, extra={"node": node, "attempts": 1,
                                                               "timing": "fleet"})


@pytest.mark.parametrize(("result", "timing"), [
    (fleet(Status.SUCCESS, 0.2), "fleet"),
    (fleet(Status.WRONG_ANSWER, 0.2), "fleet"),
    (fleet(Status.TIMEOUT, 10.0), "cap"),
    (fleet(Status.SUCCESS, 0.2, node="embedded"), "fleet"),
    (TestResult(Status.SUCCESS, 0.2), "fleet"),  # no provenance: measured where it ran
    # the client's word before the vocabularies merged (sandbox_cluster.api.LEGACY_TIMINGS)
    (TestResult(Status.SUCCESS, 0.2, extra={"node": "http://n", "timing": "measured"}), "fleet"),
    (TestResult(Status.INFRA_ERROR, 0.0, extra={"node": "n", "timing": "none"}), "none"),
    # the fallback's own conversions (sandbox_cluster.fallback.convert_local)
    (convert_local(TestResult(Status.SUCCESS, 0.01), "optimization", Limits(), 2), "cap"),
    (convert_local(TestResult(Status.SUCCESS, 0.01), "correctness", Limits(), 2), "none"),
    (convert_local(TestResult(Status.WRONG_ANSWER, 0.01), "optimization", Limits(), 2), "none"),
    # a local duration however it is labelled
    (TestResult(Status.SUCCESS, 0.01, extra={"node": "local", "timing": "measured"}), "local"),
    (TestResult(Status.SUCCESS, 0.01, extra={"fallback": True, "timing": "measured"}), "local"),
])
def test_timing_provenance(result, timing):
    assert timing_of(result) == timing


def test_embedded_durations_can_be_refused_as_off_fleet():
    assert timing_of(fleet(Status.SUCCESS, 0.2, node="embedded"), embedded_is_fleet=False) == \
        "local"


def test_record_keeps_cap_kind_input_size_and_provenance():
    record = execution_record("p", "r0", TestSpec("o3", "TO", 123_456),
                              fleet(Status.SUCCESS, 0.25), limit_s=7.5)
    assert (record.test_id, record.test_kind, record.io_chars, record.limit_s) == \
        ("o3", "TO", 123_456, 7.5)
    assert (record.status, record.duration_s, record.timing) == (Status.SUCCESS, 0.25, "fleet")
    with pytest.raises(ValueError, match="2 results for 1 tests"):
        execution_records("p", "r0", [TestSpec("t", "T0", 1)], [fleet(Status.SUCCESS, 0.1)] * 2,
                          10.0)


def test_only_fleet_durations_reach_the_batch_and_timeouts_sit_at_their_cap():
    tests = [TestSpec(f"o{i}", "TO", 10) for i in range(4)]
    results = [fleet(Status.SUCCESS, 0.3),
               TestResult(Status.SUCCESS, 0.001, extra={"node": "local", "timing": "measured"}),
               fleet(Status.TIMEOUT, 0.002),  # a timeout recorded far below its cap
               TestResult(Status.INFRA_ERROR, 0.0, extra={"node": "n", "timing": "none"})]
    recs = execution_records("p", "r0", tests, results, limit_s=4.0)
    batch, _ = batch_from_records(recs, [ReferenceDuration("p", "o0", "h", 0.2)])
    duration = np.asarray(batch.duration_BT)[0]
    assert duration[0] == np.float32(0.3)
    assert np.isnan(duration[1]) and np.isnan(duration[3])
    assert duration[2] == 4.0
    assert np.asarray(batch.status_BT)[0].tolist() == [records.SUCCESS, records.SUCCESS,
                                                       records.TIMEOUT, records.INCONCLUSIVE]
