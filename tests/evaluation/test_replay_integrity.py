"""Measurement integrity of replayed evaluation: reference durations that are
not measurements are refused, naming the problem, the test and the reference; a problem whose
stored references are all lost is unrankable; time spent on tests no reference ranks is counted.

The dumps are built by hand; every expected number is worked out in the comments."""

from __future__ import annotations

import copy
import json
import math

import pytest

from jaxopt_rl.evaluation import replay as rp
from jaxopt_rl.evaluation.dump import FORMAT, VERSION, DumpError, check_dump, read_dump
from jaxopt_rl.evaluation.report import markdown_report
from tests.evaluation.dumps import make_dump


def hand_dump(stored_o0=(0.2, 0.4), usable_o1=(False, False), fresh_o0=(0.3, 0.5)):
    """One problem: T0 test "a", TO tests "o0" and "o1"; references r0, r1 stored (and re-run
    once, fresh) on o0; on o1 they are not usable. Sample s0 is fast on o0 (0.1 s) and hits the
    10 s cap on o1; sample s1 is fast on both."""
    return {
        "format": FORMAT, "version": VERSION, "model": "hand", "n": 2,
        "created_at": "2026-01-01T00:00:00Z",
        "dataset": {"name": "hand", "root": "-", "fingerprint": "h" * 16, "campaigns": {}},
        "sampling": {}, "timing_pass": {"shuffled": True, "references_included": True,
                                        "sandbox_state": {}},
        "problems": [{
            "problem_id": "p", "difficulty": "easy",
            "tests": {"ids": ["a", "o0", "o1"], "kinds": ["T0", "TO", "TO"],
                      "limit_s": [10.0, 10.0, 10.0], "io_chars": [5, 5, 5]},
            "stored_references": {"ids": ["r0", "r1"],
                                  "duration_s": [[0.01, 0.01], list(stored_o0), [1.0, 1.0]],
                                  "usable": [[True, True], [True, True], list(usable_o1)]},
            "fresh_references": {"ids": ["r0", "r1"], "runs": [{
                "status": [["success"] * 3, ["success"] * 3],
                "duration_s": [[0.01, fresh_o0[0], 1.0], [0.01, fresh_o0[1], 1.0]]}]},
            "samples": [
                {"id": "s0", "program": "x", "status": ["success", "success", "timeout"],
                 "duration_s": [0.01, 0.1, 10.0], "timing": ["fleet", "fleet", "cap"]},
                {"id": "s1", "program": "y", "status": ["success"] * 3,
                 "duration_s": [0.01, 0.1, 0.05], "timing": ["fleet"] * 3},
            ],
        }],
    }


@pytest.mark.parametrize(("change", "where"), [
    (lambda d: d["problems"][0]["stored_references"]["duration_s"][1].__setitem__(1, math.nan),
     r"stored_references\.duration_s\[1\]\[1\]: problem 'p', test 'o0', reference 'r1'"),
    (lambda d: d["problems"][0]["stored_references"]["duration_s"][1].__setitem__(0, math.inf),
     r"duration_s\[1\]\[0\]: problem 'p', test 'o0', reference 'r0'"),
    (lambda d: d["problems"][0]["stored_references"]["duration_s"][2].__setitem__(0, -0.5),
     r"duration_s\[2\]\[0\]: problem 'p', test 'o1', reference 'r0'.*in \[0, 10\]"),
    (lambda d: d["problems"][0]["stored_references"]["duration_s"][1].__setitem__(0, 1e308),
     r"duration_s\[1\]\[0\]: problem 'p', test 'o0', reference 'r0'"),
    (lambda d: d["problems"][0]["fresh_references"]["runs"][0]["duration_s"][1].__setitem__(
        1, 1e308),
     r"runs\[0\]\.duration_s\[1\]\[1\]: problem 'p', test 'o0', reference 'r1'.*test's cap"),
    (lambda d: d["problems"][0]["fresh_references"]["runs"][0]["duration_s"][0].__setitem__(
        1, math.nan), r"problem 'p', test 'o0', reference 'r0'.*got nan"),
    (lambda d: d["problems"][0]["fresh_references"]["runs"][0]["duration_s"][0].__setitem__(
        2, -1.0), r"problem 'p', test 'o1', reference 'r0'"),
    (lambda d: d["problems"][0]["fresh_references"]["runs"][0]["duration_s"][0].__setitem__(
        1, 10.5), r"problem 'p', test 'o0', reference 'r0'.*in \[0, 10\]"),
])
def test_replay_refuses_reference_durations_that_are_not_measurements(change, where):
    dump = hand_dump()
    change(dump)
    with pytest.raises(DumpError, match=where):
        rp.replay(dump, resamples=5)  # a dict handed to replay directly, never read from a file
    with pytest.raises(DumpError, match=where):
        check_dump(dump)


def test_a_file_with_nan_references_is_refused(tmp_path):
    dump = hand_dump()
    dump["problems"][0]["stored_references"]["duration_s"][1][0] = math.nan
    path = tmp_path / "dump.json"
    path.write_text(json.dumps(dump))  # Python's json writes NaN, and reads it back
    with pytest.raises(DumpError, match=r"problem 'p', test 'o0', reference 'r0'"):
        read_dump(path)


def test_the_synthetic_dump_with_corrupted_references_no_longer_gains_p10():
    """The issue's report: NaN stored or 1e308 fresh references raised p10; now refused."""
    dump = make_dump()
    stored = copy.deepcopy(dump)
    for problem in stored["problems"]:
        problem["stored_references"]["duration_s"][-1][0] = math.nan
    fresh = copy.deepcopy(dump)
    fresh["problems"][-1]["fresh_references"]["runs"][0]["duration_s"][0][-1] = 1e308
    for bad, refs in ((stored, "stored"), (fresh, "fresh")):
        with pytest.raises(DumpError, match=r"problem 'p0\d', test 'TO/\d+', reference 'r\d'"):
            rp.replay(bad, references=refs, resamples=5)


def test_a_null_stored_duration_is_a_lost_measurement_and_is_accepted():
    dump = hand_dump(stored_o0=(None, 0.4))
    check_dump(dump)
    # o0 keeps r1 = 0.4 s; r0 is read at the 10 s cap (eq. 10). Both samples run 0.1 s on o0:
    # a(y) = 0 (no reference faster), so q_QP = 0 and both pass p10
    per = rp.replay(dump, resamples=5)["details"]["per_problem"]["p"]
    assert per["pass@1_p10"] == 1.0


def test_a_problem_whose_stored_references_are_all_lost_is_unrankable():
    # o0: both stored durations null (lost, read at the cap), o1: no usable reference. Before,
    # the 10 s references made every correct sample fastest: pass@1(p10) = 1.0. Now the problem
    # has no measured reference duration: no sample meets a speed threshold, p100 is unchanged
    result = rp.replay(hand_dump(stored_o0=(None, None)), resamples=5)
    per = result["details"]["per_problem"]["p"]
    assert per["pass@1_p100"] == 1.0 and per["pass@1_p10"] == 0.0
    assert result["details"]["unrankable_samples"] == 2
    unranked = result["details"]["unranked_tests"]
    assert unranked["by_problem"] == {"p": {"no_reference": ["o1"], "lost": ["o0"]}}
    # the fresh re-runs measured o0 (0.3 s, 0.5 s) and o1 (1 s, 1 s): against them the problem
    # ranks again. s1 beats both everywhere (q = 0); s0's 10 s on o1 gives a(s0) = (0 + 1) / 2
    # = 0.5, above a(r0) = (1/2 + 0) / 2 = 0.25 and not below a(r1) = (2/2 + 0) / 2 = 0.5:
    # q(s0) = 1/2 misses p10, so pass@1(p10) = 1/2
    fresh = rp.replay(hand_dump(stored_o0=(None, None)), references="fresh", resamples=5)
    assert fresh["details"]["per_problem"]["p"]["pass@1_p10"] == 0.5
    assert fresh["details"]["unrankable_samples"] == 0


def test_time_on_tests_without_references_is_counted_and_reported():
    # o1 has no usable reference: s0's 10 s timeout there costs it nothing (q_QP ranks o0 only,
    # where both samples beat both references: q = 0, p10 passes), so it is counted instead
    result = rp.replay(hand_dump(), resamples=5)
    assert result["details"]["per_problem"]["p"]["pass@1_p10"] == 1.0
    unranked = result["details"]["unranked_tests"]
    assert unranked["tests"] == 1
    assert unranked["by_problem"] == {"p": {"no_reference": ["o1"], "lost": []}}
    assert unranked["samples"] == 2  # both c~ samples ran o1
    assert unranked["samples_at_cap"] == 1  # s0 hit the 10 s cap there
    assert unranked["seconds"] == pytest.approx(10.0 + 0.05)
    report = markdown_report(result)
    assert "1 optimization test(s) no measured reference duration ranks" in report
    assert "(1 at the cap there" in report
    # with references on o1 (1 s each), s0's timeout ranks: it is slower than both there, so
    # a(s0) = (0 + 1) / 2 = 0.5 and it drops out of p10; s1 (0.05 s on o1) stays
    ranked = rp.replay(hand_dump(usable_o1=(True, True)), resamples=5)
    assert ranked["details"]["per_problem"]["p"]["pass@1_p10"] == 0.5
    assert ranked["details"]["unranked_tests"]["tests"] == 0
