"""RecordBatch.validate: shapes, the grouped layout (B = P * G) and the shared per-problem test
layout, padding rollouts included."""

import dataclasses

import numpy as np
import pytest

from jaxopt_rl.rewards import records


def batch(num_tests=3, num_refs=2) -> records.RecordBatch:
    """Two problems x two rollouts; the last rollout of problem 1 is padding."""
    kind_PT = np.array([[0, 1, 2], [0, 2, 2]], np.int8)[:, :num_tests]
    index_B = np.array([0, 0, 1, 1])
    return records.RecordBatch(
        status_BT=np.zeros((4, num_tests), np.int8),
        duration_BT=np.ones((4, num_tests), np.float32),
        test_mask_BT=np.ones((4, num_tests), bool),
        test_kind_BT=kind_PT[index_B], io_chars_BT=np.full((4, num_tests), 5),
        cap_BT=np.full((4, num_tests), 10.0, np.float32),
        rollout_mask_B=np.array([True, True, True, False]),
        ref_duration_PTH=np.ones((2, num_tests, num_refs), np.float32),
        ref_mask_PTH=np.ones((2, num_tests, num_refs), bool))


def test_a_consistent_batch_validates_and_knows_its_groups():
    good = batch()
    good.validate()
    assert (good.num_problems, good.group_size, good.num_rollouts) == (2, 2, 4)
    np.testing.assert_array_equal(good.problem_index_B, [0, 0, 1, 1])
    assert np.asarray(good.ref_duration_PTH[good.problem_index_B]).shape == (4, 3, 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"duration_BT": np.ones((4, 2), np.float32)}, r"duration_BT: shape \(4, 2\), expected"),
        ({"ref_mask_PTH": np.ones((2, 3, 1), bool)}, "ref_mask_PTH: shape"),
        ({"rollout_mask_B": np.ones(3, bool)}, r"rollout_mask_B: shape \(3,\)"),
        ({"ref_duration_PTH": np.ones((3, 3, 2), np.float32),
          "ref_mask_PTH": np.ones((3, 3, 2), bool)},
         "4 rollouts do not split into groups of equal size over 3 problems"),
        ({"test_kind_BT": np.array([[0, 1, 2], [0, 2, 2], [0, 2, 2], [0, 2, 2]], np.int8)},
         r"test_kind_BT\[1, 1\] differs from rollout 0 of the same problem 0"),
        ({"test_kind_BT": np.array([[0, 1, 2], [0, 2, 0], [0, 2, 2], [1, 2, 2]], np.int8)},
         r"test_kind_BT\[1, 1\] differs"),  # the first differing cell is named
        ({"status_BT": np.zeros(4, np.int8)}, r"status_BT must be \[B, T\]"),
        # one rollout of problem 0 ran test 2 under a 5 s cap, its sibling under 10 s
        ({"cap_BT": np.array([[10, 10, 10], [10, 10, 5], [10, 10, 10], [10, 10, 10]],
                             np.float32)},
         r"cap_BT\[1, 2\] differs from rollout 0 of the same problem 0"),
        ({"cap_BT": np.array([[10, 10, 10], [10, 10, 10], [10, 2.5, 10], [10, 10, 10]],
                             np.float32)},
         r"cap_BT\[3, 1\] differs from rollout 2 .* \(padding rollouts included\)"),
        ({"test_mask_BT": np.array([[1, 1, 1], [1, 1, 1], [1, 1, 1], [1, 1, 0]], bool)},
         r"test_mask_BT\[3, 2\] differs from rollout 2 .* \(padding rollouts included\)"),
    ],
)
def test_validate_names_the_bad_field(change, message):
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(batch(), **change).validate()


def test_padding_may_hold_anything():
    good = batch()
    mask = np.asarray(good.test_mask_BT).copy()
    mask[:, 2] = False  # the last test is padding for every rollout
    io_chars = np.asarray(good.io_chars_BT).copy()
    io_chars[1, 2] = -7
    status = np.asarray(good.status_BT).copy()
    status[3] = records.FAILURE  # the padding rollout
    dataclasses.replace(good, test_mask_BT=mask, io_chars_BT=io_chars, status_BT=status).validate()


def _without_rollouts(num_problems: int) -> records.RecordBatch:
    zeros_BT = np.zeros((0, 3))
    return records.RecordBatch(
        status_BT=zeros_BT.astype(np.int8), duration_BT=zeros_BT.astype(np.float32),
        test_mask_BT=zeros_BT.astype(bool), test_kind_BT=zeros_BT.astype(np.int8),
        io_chars_BT=zeros_BT.astype(np.int64), cap_BT=zeros_BT.astype(np.float32),
        rollout_mask_B=np.zeros(0, bool),
        ref_duration_PTH=np.ones((num_problems, 3, 2), np.float32),
        ref_mask_PTH=np.ones((num_problems, 3, 2), bool))


def test_group_sizes_are_integers_down_to_empty_batches():
    assert type(batch().group_size) is int  # a size: reshape(P, G, T) takes it
    no_problems = _without_rollouts(0)
    assert (no_problems.num_problems, no_problems.group_size) == (0, 0)
    with pytest.raises(ValueError, match=r"0 rollouts do not split .* over 0 problems"):
        no_problems.validate()  # the grouped layout needs a problem
    _without_rollouts(2).validate()  # problems without rollouts: nothing to disagree


def test_a_batch_is_a_value():
    # validate() remembers a checked batch by identity, which is sound only if it cannot change
    with pytest.raises(dataclasses.FrozenInstanceError):
        batch().status_BT = np.ones((4, 3), np.int8)
