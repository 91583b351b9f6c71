"""Stored human-reference durations as padded arrays for the reward kernels.

Dimension letters: P problems, T tests of a problem (padded to the batch maximum), H reference
solutions (padded), Y reference cells (rows of a record file; `jaxopt_rl.dimensions`).

This module owns the reference arrays `[P, T, H]`: `reference_arrays` is the one function that
allocates and fills the `ref_duration_PTH` / `ref_mask_PTH` pair of
`jaxopt_rl.rewards.records.RecordBatch`, from `(p, t, h)` cell coordinates. Both ways in use it:
`pad_reference_times` (a data set's `ReferenceTimes`) and the record layout
(`jaxopt_rl.data.record_layout`, reference rows of a record file or of in-memory records).

Test order. The test axis of a problem is whatever order the caller fixes: `ReferenceTimes`
keeps the dataset's order (below); a `RecordBatch` uses the order in which its execution
records first name the tests. To place a data set's references under a batch's test columns,
pass the batch's order (`pad_reference_times(refs, test_ids=index.test_ids)`): each test is
looked up by id, so the two orders can never be silently mixed.

Durations are RAW stored values: sanitisation and calibration (psi, Gamma, clamp to [0, 10])
belong to the reward kernels (docs/design/rewards.md §1: stored reference durations are
sanitised before any use). The mask is True where the reference ran on that test and finished
as success or timeout (a timeout is stored at the cap and ranks as such); failures, infra errors
and tests a reference never ran on are masked out. The test axis follows `test_ids`, which is
the dataset's test order (T0, then T+, then TO, each in id order), so it lines up with the
tests a rollout is run on.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from jaxopt_rl.rewards.records import TEST_KIND_CODE


@dataclass(frozen=True)
class ReferenceTimes:
    """One problem's `[T, H]` stored reference durations and the state they were measured in."""

    problem_id: str
    test_ids: tuple[str, ...]
    test_kind_T: np.ndarray  # int8, index into rewards.records.TEST_KINDS
    io_chars_T: np.ndarray  # int32, len(input) + len(expected)
    solution_ids: tuple[str, ...]
    duration_TH: np.ndarray  # float32 seconds, raw
    mask_TH: np.ndarray  # bool
    campaign_id: str  # which timing campaign (see the dataset manifest) measured them

    def __post_init__(self) -> None:
        t, h = len(self.test_ids), len(self.solution_ids)
        for name, shape in (("duration_TH", (t, h)), ("mask_TH", (t, h)),
                            ("test_kind_T", (t,)), ("io_chars_T", (t,))):
            actual = np.shape(getattr(self, name))
            if actual != shape:
                raise ValueError(f"ReferenceTimes({self.problem_id!r}).{name}: shape {actual}, "
                                 f"expected {shape}")

    @property
    def num_tests(self) -> int:
        return len(self.test_ids)

    @property
    def num_references(self) -> int:
        return len(self.solution_ids)


def build_reference_times(problem_id: str, tests: Sequence[tuple[str, str, int]],
                          rows: Sequence[tuple[str, str, str, float]], campaign_id: str
                          ) -> ReferenceTimes:
    """Assemble from `tests` = (test_id, kind, io_chars) in dataset order and duration `rows` =
    (test_id, solution_id, status, duration_s). Rows for unknown tests raise ValueError."""
    test_index = {test_id: j for j, (test_id, _, _) in enumerate(tests)}
    solution_ids = tuple(sorted({solution for _, solution, _, _ in rows}))
    ref_index = {s: h for h, s in enumerate(solution_ids)}
    duration_TH = np.zeros((len(tests), len(solution_ids)), dtype=np.float32)
    mask_TH = np.zeros((len(tests), len(solution_ids)), dtype=bool)
    for test_id, solution_id, status, duration_s in rows:
        if test_id not in test_index:
            raise ValueError(f"problem {problem_id!r}: duration row for unknown test {test_id!r}")
        j, h = test_index[test_id], ref_index[solution_id]
        duration_TH[j, h] = duration_s
        mask_TH[j, h] = status in ("success", "timeout")
    return ReferenceTimes(
        problem_id=problem_id,
        test_ids=tuple(t for t, _, _ in tests),
        test_kind_T=np.array([TEST_KIND_CODE[k] for _, k, _ in tests], dtype=np.int8),
        io_chars_T=np.array([c for _, _, c in tests], dtype=np.int32),
        solution_ids=solution_ids,
        duration_TH=duration_TH,
        mask_TH=mask_TH,
        campaign_id=campaign_id,
    )


def reference_arrays(p_Y, t_Y, h_Y, duration_Y, shape: tuple[int, int, int],
                     mask_Y=None) -> tuple[np.ndarray, np.ndarray]:
    """`(ref_duration_PTH float32, ref_mask_PTH bool)` of `shape`, 0 / False except at the cells
    `(p_Y, t_Y, h_Y)`, which get `duration_Y` (raw, may be NaN: no stored value) and `mask_Y`
    (default True: the reference ran there)."""
    ref_duration_PTH = np.zeros(shape, np.float32)
    ref_mask_PTH = np.zeros(shape, bool)
    if len(p_Y):
        ref_duration_PTH[p_Y, t_Y, h_Y] = duration_Y
        ref_mask_PTH[p_Y, t_Y, h_Y] = True if mask_Y is None else mask_Y
    return ref_duration_PTH, ref_mask_PTH


def pad_reference_times(references: Sequence[ReferenceTimes], num_tests: int | None = None,
                        num_references: int | None = None,
                        test_ids: Sequence[Sequence[str]] | None = None
                        ) -> tuple[np.ndarray, np.ndarray]:
    """(`ref_duration_PTH` float32, `ref_mask_PTH` bool), padded with 0 / False.

    `num_tests` / `num_references` fix the padded sizes (e.g. to bucket shapes for jit); they
    must be at least the largest problem's, else ValueError names the problem. `test_ids[p]`
    (optional) is the test order of the batch the arrays go with (`RecordIndex.test_ids`):
    problem `p`'s references are placed under those columns, looked up by id; a test of the
    batch without references stays masked, a referenced test the batch lacks is an error.
    """
    if test_ids is not None and len(test_ids) != len(references):
        raise ValueError(f"test_ids has {len(test_ids)} problems, references {len(references)}")
    if test_ids is not None:
        widest = max((len(ids) for ids in test_ids), default=0)
        if num_tests is not None and num_tests < widest:
            raise ValueError(f"num_tests={num_tests} is below the batch's {widest} tests")
        num_tests = widest if num_tests is None else num_tests
    t_max = max((r.num_tests for r in references), default=0)
    h_max = max((r.num_references for r in references), default=0)
    t_pad = t_max if num_tests is None else num_tests
    h_pad = h_max if num_references is None else num_references
    for ref in references:  # (with test_ids, the look-up by id below checks the tests)
        too_many_tests = test_ids is None and ref.num_tests > t_pad
        if too_many_tests or ref.num_references > h_pad:
            raise ValueError(f"problem {ref.problem_id!r} has {ref.num_tests} tests x "
                             f"{ref.num_references} references, more than the padded "
                             f"{t_pad} x {h_pad}")
    cells = [], [], [], [], []
    for p, ref in enumerate(references):
        columns = np.arange(ref.num_tests)
        if test_ids is not None:
            where = {test_id: t for t, test_id in enumerate(test_ids[p])}
            unknown = [test_id for test_id in ref.test_ids if test_id not in where]
            if unknown:
                raise ValueError(f"problem {ref.problem_id!r}: references for test "
                                 f"{unknown[0]!r}, which the batch does not have")
            columns = np.array([where[test_id] for test_id in ref.test_ids], np.int64)
        t_TH, h_TH = np.meshgrid(columns, np.arange(ref.num_references), indexing="ij")
        for out, values in zip(cells, (np.full(t_TH.shape, p), t_TH, h_TH, ref.duration_TH,
                                       ref.mask_TH)):
            out.append(np.asarray(values).reshape(-1))
    p_Y, t_Y, h_Y, duration_Y, mask_Y = (np.concatenate(c) if c else np.zeros(0, np.int64)
                                         for c in cells)
    return reference_arrays(p_Y, t_Y, h_Y, duration_Y, (len(references), t_pad, h_pad),
                            mask_Y=mask_Y.astype(bool))
