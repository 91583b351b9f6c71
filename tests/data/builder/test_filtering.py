"""Table 13 filtering round: test removal with caps, reclassification, gates."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.data.builder.config import FilterConfig, OptimizationFilterConfig
from jaxopt_rl.data.builder.filtering import filter_round

LOOSE = FilterConfig(min_correct=1, max_correct_drop=1.0, max_false_positive=None, min_incorrect=0)


def ids(n):
    return [f"t{j}" for j in range(n)]


def test_timeout_filter_removes_worst_first_up_to_the_cap():
    # 8 tests; t0..t3 time out for 3/4, 2/4, 2/4, 1/4 correct solutions (threshold 20%).
    correct = {"a": "TTTSSSSS", "b": "TTSSSSSS", "c": "TSTTSSSS", "d": "SSSSSSSS"}
    decision = filter_round(ids(8), correct, {}, dict.fromkeys(correct, True), LOOSE)
    # cap = floor(0.25 * 8) = 2: t0 (75%) first, then t1/t2 (50%) tie broken by id
    assert decision.removed_timeout == ("t0", "t1")
    assert "t2" in decision.kept_tests and "t3" in decision.kept_tests
    assert decision.correct_lost == ("a", "c")  # still time out on kept tests


def test_failure_filter_runs_on_the_remaining_tests_and_ignores_syntax_errors():
    correct = {"a": "WWSS", "b": "RYSS", "c": "YYSS", "d": "SSSS", "e": "SSSS"}
    # Failures (syntax errors Y not counted): t0 2/5 (a, b), t1 1/5 (a); with Y they would be 3/5.
    decision = filter_round(ids(4), correct, {}, dict.fromkeys(correct, True),
                            FilterConfig(min_correct=1, max_correct_drop=1.0, failure_cap=0.5))
    # threshold 40%: 2/5 is not above it
    assert decision.removed_failure == ()
    decision = filter_round(ids(4), correct, {}, dict.fromkeys(correct, True),
                            FilterConfig(min_correct=1, max_correct_drop=1.0, failure_fraction=0.3,
                                         failure_cap=0.5))
    assert decision.removed_failure == ("t0",)


def test_false_positive_gate_uses_the_whole_incoming_negative_pool():
    correct = {"a": "SS", "b": "SS"}
    incorrect = {f"n{i}": "SS" if i == 0 else "SW" for i in range(10)}
    prior = dict.fromkeys([*correct, *incorrect], True)
    config = FilterConfig(min_correct=2)
    decision = filter_round(ids(2), correct, incorrect, prior, config)
    assert decision.incorrect_lost == ("n0",)
    assert math.isclose(decision.false_positive_rate, 0.1)
    assert "false-positive rate 10.0%" in decision.gate
    # A negative that already fails a prior suite (T0) stays a negative control.
    prior["n0"] = False
    decision = filter_round(ids(2), correct, incorrect, prior, config)
    assert decision.incorrect_lost == () and decision.gate == ""


def test_gates():
    correct = {c: "S" for c in "abcde"}
    ok = filter_round(ids(1), correct, {"n": "W"}, dict.fromkeys([*correct, "n"], True),
                      FilterConfig())
    assert ok.gate == ""
    few = filter_round(ids(1), dict(list(correct.items())[:4]), {"n": "W"},
                       dict.fromkeys([*correct, "n"], True), FilterConfig())
    assert few.gate.startswith("4 correct solution(s) left < 5")
    dropping = {**correct, "f": "W", "g": "W"}
    lost = filter_round(ids(1), dropping, {"n": "W"}, dict.fromkeys([*dropping, "n"], True),
                        FilterConfig(min_correct=1, failure_cap=0.0))
    assert lost.gate.startswith("lost 29% of correct solutions")
    no_negatives = filter_round(ids(1), correct, {}, dict.fromkeys(correct, True), FilterConfig())
    assert no_negatives.gate.startswith("0 negative control(s) left")


def test_optimization_round_counts_timeouts_as_passing():
    correct = {"a": "TS", "b": "SS"}
    decision = filter_round(ids(2), correct, {"n": "SS"}, {"a": True, "b": True, "n": False},
                            OptimizationFilterConfig())
    assert decision.correct_lost == () and decision.gate == ""
    assert decision.removed_timeout == ()  # 50% <= 90%


outcome_rows = st.text(alphabet="STWRY", min_size=6, max_size=6)


@given(st.dictionaries(st.sampled_from("abcdefgh"), outcome_rows, min_size=1),
       st.dictionaries(st.sampled_from("nopq"), outcome_rows),
       st.floats(0, 1), st.floats(0, 1), st.floats(0, 1), st.floats(0, 1))
def test_invariants(correct, incorrect, t_frac, t_cap, f_frac, f_cap):
    config = FilterConfig(timeout_fraction=t_frac, timeout_cap=t_cap, failure_fraction=f_frac,
                          failure_cap=f_cap, min_correct=1)
    prior = dict.fromkeys([*correct, *incorrect], True)
    d = filter_round(ids(6), correct, incorrect, prior, config)
    assert len(d.removed_timeout) <= math.floor(t_cap * 6)
    assert len(d.removed_failure) <= math.floor(f_cap * (6 - len(d.removed_timeout)))
    assert set(d.kept_tests) | set(d.removed_timeout) | set(d.removed_failure) == set(ids(6))
    # Removal is monotone: whoever passed the unfiltered suite still passes the filtered one.
    full_pass = {s for s, row in correct.items() if set(row) == {"S"}}
    assert not full_pass & set(d.correct_lost)
    # Reclassification matches the definition on the kept columns.
    kept_cols = [int(t[1:]) for t in d.kept_tests]
    for s, row in correct.items():
        assert (s in d.correct_lost) == any(row[j] != "S" for j in kept_cols)
    for s, row in incorrect.items():
        assert (s in d.incorrect_lost) == all(row[j] == "S" for j in kept_cols)
