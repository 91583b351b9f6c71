"""The execution table at the seam between the sandbox and the rewards: the one rule that fixes a
duration from its status and provenance, and the one constructor of a `RecordBatch`.

Every caller that turns executed programs into something the rewards read comes through here:
the record layout (`record_layout.layout`: the trainer's records, record files, the data
builder's files), the evaluation replay (`evaluation.replay.dump_batch`), the simulator's
stored references (`simulator.replay.leave_one_out_records`), the reference re-timing
(`rollouts.problems`), the timing pass and the calibration fits (`rollouts.timing_pass`,
`evaluation.calibration`). It lives in `data`, not in `rollouts`, because the layering lets
`data` (the builder) and the simulator import `data` but not `rollouts`
(`tests/test_import_layers.py`); `rollouts.execute` owns the step before it (a sandbox
`TestResult` -> a typed `ExecutionRecord` with its provenance).

Provenance has one vocabulary, `sandbox_cluster.api.TIMINGS` (fleet, cap, local, none), from the
client's `TestResult.extra["timing"]` to the records' `timing` column and the evaluation dumps.
`timing_code` reads a word of it as an int8 code (`TIMING_CODE`); an absent word is `fleet`
(measured where it ran), the client's old word `measured` is `fleet` too.

The rule (`timed_duration`, docs/design/sandbox-timing.md §1.15 and §4), written here once:
  * a timeout counts at its cap, whatever duration it carries (the sandbox stopped it there);
  * any other verdict keeps its duration only when it was measured on the timing fleet
    (`fleet`); any other provenance (`local`, `none`, `cap` on a non-timeout) is NaN: such a
    duration never enters a ranking, a limit or a reward (the environment counts the cells it
    would read, `Signals.untimed_B`).
A duration that can rank (`rankable`) is a success or a timeout whose timed duration is a finite
number >= 0.

`ExecutionTable` is the grouped layout the rewards read (P problems x G rollouts x T tests, the
tests' kind, cap and input size per problem), with the rule already applied; `record_batch`
adds a reference block and builds the `RecordBatch` (the only `RecordBatch(...)` in the
library). Arrays pass through as they are (NumPy or JAX); per-problem columns are repeated over
the G rows of their problem.

Dimension letters: B rollouts, P problems, G rollouts per problem, T tests, H references,
A any axis (`jaxopt_rl.dimensions`).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from jaxopt_rl.rewards.records import SUCCESS, TIMEOUT, RecordBatch
from sandbox_cluster.api import LEGACY_TIMINGS, TIMINGS

TIMING_CODE = {name: code for code, name in enumerate(TIMINGS)}
FLEET = TIMING_CODE["fleet"]
NONE = TIMING_CODE["none"]


def timing_code(word: str | None) -> int:
    """The code of a provenance word: None (not recorded) and the legacy `measured` read as
    `fleet`; a word outside `TIMINGS` is -1 (the record reader refuses it by name)."""
    if word is None:
        return FLEET
    return TIMING_CODE.get(LEGACY_TIMINGS.get(word, word), -1)


def timed_duration(status_A, duration_A, cap_A, timing_A):
    """THE status-and-provenance rule (module docstring): `status_A` reward codes
    (`rewards.records`), `duration_A` raw seconds, `cap_A` the caps, `timing_A` codes of
    `TIMINGS` (broadcast together). A timeout is at its cap; otherwise a fleet duration is kept
    and any other is NaN. NumPy float64 (callers cast where they store)."""
    return np.where(np.asarray(status_A) == TIMEOUT, cap_A,
                    np.where(np.asarray(timing_A) == FLEET, duration_A, np.nan))


def rankable(status_A, timed_A) -> np.ndarray:
    """Where a timed duration (`timed_duration`) may rank: a success or a timeout whose timed
    duration is finite and >= 0."""
    status_A = np.asarray(status_A)
    timed_A = np.asarray(timed_A, np.float64)
    with np.errstate(invalid="ignore"):
        return (((status_A == SUCCESS) | (status_A == TIMEOUT)) & np.isfinite(timed_A)
                & (timed_A >= 0))


@dataclasses.dataclass(frozen=True)
class ExecutionTable:
    """Executed programs in the grouped layout, the rule applied (NumPy or JAX arrays).

    status_PGT      int8     reward codes (`rewards.records`); padding rollouts INCONCLUSIVE
    duration_PGT    float32  `timed_duration` of each cell (padding: whatever the caller sets)
    rollout_mask_PG bool     a real rollout
    test_mask_PT    bool     the test exists (per problem, or per row when G = 1)
    test_kind_PT    int8     index into `rewards.records.TEST_KINDS`
    io_chars_PT     int32    len(input) + len(expected output)
    cap_PT          float32  the cap each test ran under
    """

    status_PGT: np.ndarray
    duration_PGT: np.ndarray
    rollout_mask_PG: np.ndarray
    test_mask_PT: np.ndarray
    test_kind_PT: np.ndarray
    io_chars_PT: np.ndarray
    cap_PT: np.ndarray


def _rows(x_PGT, p: int, g: int):
    """`[P, G, ...]` -> `[P * G, ...]` (a reshape; JAX arrays stay JAX arrays)."""
    return x_PGT.reshape((p * g, *x_PGT.shape[2:]))


def _per_rollout(x_PT, g: int):
    """A per-problem column repeated over the G rows of its problem (G = 1: unchanged)."""
    return x_PT if g == 1 else np.repeat(np.asarray(x_PT), g, axis=0)


def record_batch(table: ExecutionTable, ref_duration_PTH, ref_mask_PTH) -> RecordBatch:
    """The one `RecordBatch` constructor: `table` in the grouped layout plus each problem's
    reference block (`[P, T, H]`: raw stored durations and which are usable)."""
    p, g = table.status_PGT.shape[:2]
    return RecordBatch(
        status_BT=_rows(table.status_PGT, p, g),
        duration_BT=_rows(table.duration_PGT, p, g),
        test_mask_BT=_per_rollout(table.test_mask_PT, g),
        test_kind_BT=_per_rollout(table.test_kind_PT, g),
        io_chars_BT=_per_rollout(table.io_chars_PT, g),
        cap_BT=_per_rollout(table.cap_PT, g),
        rollout_mask_B=_rows(table.rollout_mask_PG, p, g),
        ref_duration_PTH=ref_duration_PTH,
        ref_mask_PTH=ref_mask_PTH,
    )


__all__ = ["FLEET", "NONE", "TIMINGS", "TIMING_CODE", "ExecutionTable", "rankable",
           "record_batch", "timed_duration", "timing_code"]
