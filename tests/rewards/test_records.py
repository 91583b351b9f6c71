"""RecordBatch.validate: shapes, problem index range and the shared per-problem test layout."""

import dataclasses

import numpy as np
import pytest

from jaxopt_rl.rewards import records


def batch(num_rollouts=4, num_tests=3, num_refs=2) -> records.RecordBatch:
    index_B = np.array([0, 1, 0, 1][:num_rollouts], np.int32)
    kind_PT = np.array([[0, 1, 2], [0, 2, 2]], np.int8)
    return records.RecordBatch(
        status_BT=np.zeros((num_rollouts, num_tests), np.int8),
        duration_BT=np.ones((num_rollouts, num_tests), np.float32),
        test_mask_BT=np.ones((num_rollouts, num_tests), bool),
        test_kind_BT=kind_PT[index_B], io_chars_BT=np.full((num_rollouts, num_tests), 5),
        cap_BT=np.full((num_rollouts, num_tests), 10.0, np.float32), problem_index_B=index_B,
        ref_duration_PTH=np.ones((2, num_tests, num_refs), np.float32),
        ref_mask_PTH=np.ones((2, num_tests, num_refs), bool))


def test_a_consistent_batch_validates():
    batch().validate()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"duration_BT": np.ones((4, 2), np.float32)}, r"duration_BT: shape \(4, 2\), expected"),
        ({"ref_mask_PTH": np.ones((2, 3, 1), bool)}, "ref_mask_PTH: shape"),
        ({"problem_index_B": np.array([0, 1, 2, 1], np.int32)}, r"values must lie in \[0, 2\)"),
        ({"test_kind_BT": np.array([[0, 1, 2], [0, 2, 2], [0, 2, 2], [0, 2, 2]], np.int8)},
         r"test_kind_BT\[2, 1\] differs from rollout 0 of the same problem 0"),
        ({"test_mask_BT": np.array([[1, 1, 1], [1, 1, 0], [1, 1, 1], [1, 1, 1]], bool)},
         r"test_mask_BT\[3, 2\] differs from rollout 1"),
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
    dataclasses.replace(good, test_mask_BT=mask, io_chars_BT=io_chars).validate()
