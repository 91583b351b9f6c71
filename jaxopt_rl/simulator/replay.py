"""Stored reference executions as the simulator's candidates, and their leave-one-out batches.

The simulator replaces the policy by reference solutions and the sandbox by their stored
executions (docs/design/simulator.md §1). This module owns that replacement:

  * `StoredRuns`: a data set's stored reference executions as padded `[P, T, H]` arrays
    (raw durations, reward status codes, which (test, reference) has a stored verdict), read
    from a built dataset (`load_stored_runs`, e.g. DMC-Optim-mini's committed build);
  * `quality_scores`: each reference's quality `a(h)`, its mean per-test percentile among the
    *other* references of its problem on the optimization tests (`rewards.qar`, environment
    tie rule), lower is faster;
  * `leave_one_out_records`: a `rewards.RecordBatch` whose rollouts are stored references:
    row `b` replays reference `h_b` of problem `p_b` with its stored statuses and durations,
    and its reference block is problem `p_b`'s references *without* `h_b` (a sampled reference
    is never ranked against itself). Each row is its own group (G = 1), so the batch's problem
    axis is the row axis, B = P_batch; the batch is built by the one constructor,
    `data.execution_table.record_batch`.

Choices (the paper leaves them open; docs/design/simulator.md §1):
  * a test on which the replayed reference has no stored verdict (DMC-Optim stores durations
    on T0 and TO tests only; T+ verdicts of verified references are not kept) is not part of
    that rollout's tests (`test_mask_BT` False): the simulator replays what is stored, nothing
    more;
  * the replayed durations go through the environment's calibration `Gamma` and the clamp of
    eq. 10 (docs/design/rewards.md §1), like the references they are ranked against: a stored
    duration is a campaign measurement, and an online candidate is measured on the scale `Gamma`
    maps references to;
  * stored statuses map to reward codes as the sandbox's do (`rewards.records.STATUS_CODE`);
    every stored duration is a campaign measurement (provenance `fleet`), so the table's
    status-and-provenance rule has nothing to drop: the replayed durations are the calibrated
    ones, and the environment reads a timeout at its cap as it does for any record.

Dimension letters: P problems, T tests (padded), H references (padded), B rollouts of a batch.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax.numpy as jnp
import numpy as np

from jaxopt_rl.data.execution_table import ExecutionTable, record_batch
from jaxopt_rl.rewards import qar, sanitize_reference_durations
from jaxopt_rl.rewards.records import FAILURE, STATUS_CODE, TEST_KIND_CODE, RecordBatch

_CODE_OF_STATUS = {str(status): code for status, code in STATUS_CODE.items()}


@dataclasses.dataclass(frozen=True)
class StoredRuns:
    """Stored reference executions of P problems, padded.

    duration_PTH   float32  raw stored seconds (0 where nothing is stored)
    status_PTH     int8     reward status code of the stored verdict (FAILURE where none)
    stored_PTH     bool     a verdict is stored for (test, reference)
    ref_mask_PTH   bool     usable as a reference duration (stored success or timeout), as
                            `Dataset.reference_arrays` gives it
    reference_PH   bool     the reference exists (not padding)
    test_mask_PT, test_kind_PT (int8), io_chars_PT (int32)   the problem's tests
    cap_s          the cap the stored durations were measured under
    """

    problem_ids: tuple[str, ...]
    solution_ids: tuple[tuple[str, ...], ...]
    duration_PTH: np.ndarray
    status_PTH: np.ndarray
    stored_PTH: np.ndarray
    ref_mask_PTH: np.ndarray
    reference_PH: np.ndarray
    test_mask_PT: np.ndarray
    test_kind_PT: np.ndarray
    io_chars_PT: np.ndarray
    cap_s: float

    @property
    def shape(self) -> tuple[int, int, int]:
        return self.duration_PTH.shape

    def pairs(self) -> tuple[np.ndarray, np.ndarray]:
        """`(problem_B, reference_B)`: every existing (problem, reference), problem-major."""
        p_B, h_B = np.nonzero(self.reference_PH)
        return p_B.astype(np.int32), h_B.astype(np.int32)


def load_stored_runs(dataset, problem_ids: Sequence[str] | None = None) -> StoredRuns:
    """Read the stored reference executions of `problem_ids` (default: all problems) from a
    built `jaxopt_rl.data.store.Dataset`."""
    ids = tuple(dataset.problem_ids() if problem_ids is None else problem_ids)
    if not ids:
        raise ValueError(f"dataset {dataset.root} has no problems to simulate")
    times = [dataset.reference_times(p) for p in ids]
    t_max = max(r.num_tests for r in times)
    h_max = max(r.num_references for r in times)
    if h_max < 2:
        raise ValueError("the simulator needs problems with at least 2 stored references")
    shape = (len(ids), t_max, h_max)
    duration_PTH = np.zeros(shape, np.float32)
    status_PTH = np.full(shape, FAILURE, np.int8)
    stored_PTH = np.zeros(shape, bool)
    ref_mask_PTH = np.zeros(shape, bool)
    reference_PH = np.zeros(shape[::2], bool)
    test_mask_PT = np.zeros(shape[:2], bool)
    test_kind_PT = np.zeros(shape[:2], np.int8)
    io_chars_PT = np.zeros(shape[:2], np.int32)
    caps = set()
    for p, ref in enumerate(times):
        t, h = ref.num_tests, ref.num_references
        duration_PTH[p, :t, :h] = ref.duration_TH
        ref_mask_PTH[p, :t, :h] = ref.mask_TH
        reference_PH[p, :h] = True
        test_mask_PT[p, :t] = True
        test_kind_PT[p, :t] = ref.test_kind_T
        io_chars_PT[p, :t] = ref.io_chars_T
        test_index = {test_id: j for j, test_id in enumerate(ref.test_ids)}
        ref_index = {s: k for k, s in enumerate(ref.solution_ids)}
        for row in dataset.duration_rows(ref.problem_id):
            j, k = test_index[row["test_id"]], ref_index[row["solution_id"]]
            if row["status"] not in _CODE_OF_STATUS:
                raise ValueError(f"problem {ref.problem_id!r}: stored status {row['status']!r} "
                                 f"is not one of {', '.join(_CODE_OF_STATUS)}")
            status_PTH[p, j, k] = _CODE_OF_STATUS[row["status"]]
            stored_PTH[p, j, k] = True
        campaign = dataset.manifest.get("timing_campaigns", {}).get(ref.campaign_id, {})
        caps.add(float(campaign.get("time_cap_s", 10.0)))
    if len(caps) > 1:
        raise ValueError(f"stored durations were measured under several caps {sorted(caps)}")
    return StoredRuns(problem_ids=ids, solution_ids=tuple(r.solution_ids for r in times),
                      duration_PTH=duration_PTH, status_PTH=status_PTH, stored_PTH=stored_PTH,
                      ref_mask_PTH=ref_mask_PTH, reference_PH=reference_PH,
                      test_mask_PT=test_mask_PT, test_kind_PT=test_kind_PT,
                      io_chars_PT=io_chars_PT, cap_s=caps.pop())


def _without_own_column(mask_BTH: np.ndarray, reference_B: np.ndarray) -> np.ndarray:
    """Clear column `reference_B[b]` of row b: the replayed reference leaves its own pool."""
    mask_BTH = mask_BTH.copy()
    mask_BTH[np.arange(len(reference_B)), :, reference_B] = False
    return mask_BTH


def quality_scores(runs: StoredRuns) -> np.ndarray:
    """`a(h)` `[P, H]`: each reference's mean per-test percentile among the other references
    of its problem, over the optimization tests (TO) where it has a stored usable duration
    (durations sanitised, identity calibration). NaN for padding or a reference with no such
    test. Lower is faster."""
    p_B, h_B = runs.pairs()
    clean_PTH = np.asarray(sanitize_reference_durations(runs.duration_PTH, 1.0, 0.0,
                                                        runs.cap_s))
    cand_BT = clean_PTH[p_B, :, h_B]
    own_usable_BT = runs.ref_mask_PTH[p_B, :, h_B]
    test_mask_BT = own_usable_BT & (runs.test_kind_PT[p_B] == TEST_KIND_CODE["TO"])
    pool_mask_BTH = _without_own_column(runs.ref_mask_PTH[p_B], h_B)
    score_B = np.asarray(qar(cand_BT, clean_PTH[p_B], pool_mask_BTH, test_mask_BT))
    score_PH = np.full(runs.reference_PH.shape, np.nan, np.float32)
    score_PH[p_B, h_B] = score_B
    return score_PH


def leave_one_out_records(runs: StoredRuns, problem_B, reference_B, alpha: float = 1.0,
                          beta_s: float = 0.0, cap_s: float = 10.0) -> RecordBatch:
    """A `RecordBatch` replaying reference `reference_B[b]` of problem `problem_B[b]` in row b,
    ranked against the problem's other references (G = 1; see the module docstring).
    `alpha, beta_s, cap_s`: the environment's calibration and service cap."""
    p_B = np.asarray(problem_B, np.int32)
    h_B = np.asarray(reference_B, np.int32)
    if p_B.shape != h_B.shape or p_B.ndim != 1 or p_B.size == 0:
        raise ValueError("problem_B and reference_B must be equal-length, non-empty vectors")
    if not runs.reference_PH[p_B, h_B].all():
        bad = int(np.flatnonzero(~runs.reference_PH[p_B, h_B])[0])
        raise ValueError(f"row {bad}: problem {p_B[bad]} has no reference {h_B[bad]}")
    raw_BT = runs.duration_PTH[p_B, :, h_B]
    duration_BT = sanitize_reference_durations(raw_BT, alpha, beta_s, cap_s)
    b, t = raw_BT.shape
    # G = 1: each row is its own problem, so the table's per-problem columns are per row
    table = ExecutionTable(
        status_PGT=jnp.asarray(runs.status_PTH[p_B, :, h_B]).reshape(b, 1, t),
        duration_PGT=duration_BT.reshape(b, 1, t),
        rollout_mask_PG=jnp.ones((b, 1), bool),
        test_mask_PT=jnp.asarray(runs.test_mask_PT[p_B] & runs.stored_PTH[p_B, :, h_B]),
        test_kind_PT=jnp.asarray(runs.test_kind_PT[p_B]),
        io_chars_PT=jnp.asarray(runs.io_chars_PT[p_B]),
        cap_PT=jnp.full(raw_BT.shape, runs.cap_s, jnp.float32),
    )
    return record_batch(table, jnp.asarray(runs.duration_PTH[p_B]),
                        jnp.asarray(_without_own_column(runs.ref_mask_PTH[p_B], h_B)))


__all__ = ["StoredRuns", "leave_one_out_records", "load_stored_runs", "quality_scores"]
