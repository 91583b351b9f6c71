"""Reference-duration arrays: assembly and padding against loops, RecordBatch compatibility."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.data.references import build_reference_times, pad_reference_times
from jaxopt_rl.rewards.records import TEST_KIND_CODE, RecordBatch

STATUSES = ["success", "timeout", "wrong_answer", "runtime_error"]


@st.composite
def problems(draw, index):
    n_tests = draw(st.integers(0, 5))
    n_refs = draw(st.integers(1, 4))
    tests = [(f"T{j}", draw(st.sampled_from(["T0", "T+", "TO"])), draw(st.integers(0, 99)))
             for j in range(n_tests)]
    rows = []
    for j in range(n_tests):
        for h in range(n_refs):
            if draw(st.booleans()):
                rows.append((f"T{j}", f"ref{h}", draw(st.sampled_from(STATUSES)),
                             draw(st.floats(0.0, 10.0))))
    return build_reference_times(f"p{index}", tests, rows, "c1")


@given(st.lists(st.integers(0, 10**6), min_size=1, max_size=4).flatmap(
    lambda ids: st.tuples(*(problems(i) for i in range(len(ids))))))
def test_padding_matches_loop(refs):
    duration_PTH, mask_PTH = pad_reference_times(refs)
    t_max = max(r.num_tests for r in refs)
    h_max = max(r.num_references for r in refs)
    assert duration_PTH.shape == mask_PTH.shape == (len(refs), t_max, h_max)
    for p, ref in enumerate(refs):
        for t in range(t_max):
            for h in range(h_max):
                inside = t < ref.num_tests and h < ref.num_references
                assert mask_PTH[p, t, h] == (inside and bool(ref.mask_TH[t, h]))
                want = ref.duration_TH[t, h] if inside else 0.0
                assert duration_PTH[p, t, h] == np.float32(want)


def test_assembly_orders_by_test_and_masks_unusable_statuses():
    tests = [("T0/000", "T0", 5), ("TO/a00/c01", "TO", 900)]
    rows = [("TO/a00/c01", "b", "timeout", 10.0), ("T0/000", "a", "success", 0.02),
            ("TO/a00/c01", "a", "wrong_answer", 0.5)]
    ref = build_reference_times("p", tests, rows, "camp")
    assert ref.solution_ids == ("a", "b")
    np.testing.assert_array_equal(ref.mask_TH, [[True, False], [False, True]])
    np.testing.assert_allclose(ref.duration_TH, [[0.02, 0.0], [0.5, 10.0]], rtol=1e-6)
    assert list(ref.test_kind_T) == [TEST_KIND_CODE["T0"], TEST_KIND_CODE["TO"]]
    assert list(ref.io_chars_T) == [5, 900]
    with pytest.raises(ValueError, match="unknown test 'TX'"):
        build_reference_times("p", tests, [("TX", "a", "success", 1.0)], "camp")


def test_fixed_padding_too_small_names_the_problem():
    ref = build_reference_times("big", [("t", "TO", 1)], [("t", "a", "success", 1.0)], "c")
    duration_PTH, _ = pad_reference_times([ref], num_tests=4, num_references=3)
    assert duration_PTH.shape == (1, 4, 3)
    with pytest.raises(ValueError, match="'big'"):
        pad_reference_times([ref], num_tests=0)


def test_arrays_plug_into_record_batch():
    tests = [("t0", "T0", 3), ("t1", "TO", 30)]
    refs = [build_reference_times("p", tests, [("t1", "a", "success", 0.3)], "c"),
            build_reference_times("q", tests[:1], [("t0", "b", "success", 0.1)], "c")]
    duration_PTH, mask_PTH = pad_reference_times(refs)
    b, t = 4, duration_PTH.shape[1]  # grouped layout: two problems x two rows, one padding
    batch = RecordBatch(
        status_BT=np.zeros((b, t), np.int8), duration_BT=np.zeros((b, t), np.float32),
        test_mask_BT=np.ones((b, t), bool), test_kind_BT=np.zeros((b, t), np.int8),
        io_chars_BT=np.zeros((b, t), np.int32), cap_BT=np.full((b, t), 10.0, np.float32),
        rollout_mask_B=np.array([True, True, True, False]), ref_duration_PTH=duration_PTH,
        ref_mask_PTH=mask_PTH)
    batch.validate()
    assert np.asarray(batch.ref_mask_PTH[batch.problem_index_B]).shape == (4, 2, 1)


def test_references_land_under_the_batch_test_order():
    tests = [("a", "TO", 1), ("b", "TO", 1)]
    ref = build_reference_times("p", tests, [("a", "h", "success", 0.25),
                                             ("b", "h", "success", 0.75)], "c")
    duration_PTH, mask_PTH = pad_reference_times([ref], test_ids=[("b", "x", "a")])
    assert duration_PTH[0, :, 0].tolist() == [0.75, 0.0, 0.25]
    assert mask_PTH[0, :, 0].tolist() == [True, False, True]  # "x" has no reference
    with pytest.raises(ValueError, match="references for test 'a', which the batch does not have"):
        pad_reference_times([ref], test_ids=[("b",)])
