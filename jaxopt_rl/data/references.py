"""Stored human-reference durations as padded arrays for the reward kernels.

Dimension letters: P problems, T tests of a problem (padded to the batch maximum), H reference
solutions (padded). `pad_reference_times` produces exactly the `ref_duration_PTH` /
`ref_mask_PTH` pair of `jaxopt_rl.rewards.records.RecordBatch`.

Durations are RAW stored values: sanitisation and calibration (psi, Gamma, clamp to [0, 10])
belong to the reward kernels (spec rewards.md "Reference durations are sanitised before any
use"). The mask is True where the reference ran on that test and finished as success or timeout
(a timeout is stored at the cap and ranks as such); failures, infra errors and tests a reference
never ran on are masked out. The test axis follows `test_ids`, which is the dataset's test order
(T0, then T+, then TO, each in id order), so it lines up with the tests a rollout is run on.
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


def pad_reference_times(references: Sequence[ReferenceTimes], num_tests: int | None = None,
                        num_references: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(`ref_duration_PTH` float32, `ref_mask_PTH` bool), padded with 0 / False.

    `num_tests` / `num_references` fix the padded sizes (e.g. to bucket shapes for jit); they
    must be at least the largest problem's, else ValueError names the problem.
    """
    t_max = max((r.num_tests for r in references), default=0)
    h_max = max((r.num_references for r in references), default=0)
    t_pad = t_max if num_tests is None else num_tests
    h_pad = h_max if num_references is None else num_references
    for ref in references:
        if ref.num_tests > t_pad or ref.num_references > h_pad:
            raise ValueError(f"problem {ref.problem_id!r} has {ref.num_tests} tests x "
                             f"{ref.num_references} references, more than the padded "
                             f"{t_pad} x {h_pad}")
    ref_duration_PTH = np.zeros((len(references), t_pad, h_pad), dtype=np.float32)
    ref_mask_PTH = np.zeros((len(references), t_pad, h_pad), dtype=bool)
    for p, ref in enumerate(references):
        ref_duration_PTH[p, :ref.num_tests, :ref.num_references] = ref.duration_TH
        ref_mask_PTH[p, :ref.num_tests, :ref.num_references] = ref.mask_TH
    return ref_duration_PTH, ref_mask_PTH
