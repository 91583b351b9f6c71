"""Sandbox results of a sampler call -> the execution table -> a `RecordBatch`, as arrays.

The rollouts' side of the seam between the sandbox and the rewards: `ProblemRun`s (what a problem
runs: its tests, their kinds and caps, its stored references) and the sandbox results of G
programs per problem become one `data.execution_table.ExecutionTable` (P problems x G rollouts x
T tests: reward status, duration read by the one status-and-provenance rule, cap, test kind,
input size) and, with the problems' reference blocks, one `RecordBatch` through the one
constructor (`data.execution_table.record_batch`). No per-cell record objects, no string ids,
no file validator: the trainer's results are typed already, and the provenance of each duration
is settled by `rollouts.execute.timing_of` (the same as for a record).

The batch is the one `data.execution_records.batch_from_records` lays out from the same results
turned into records (problems in call order, each problem's tests in its `ProblemRun.specs`
order, its references in order of first appearance, padding as there), so both paths agree
bit for bit (`tests/rollouts/test_execution_table.py`). Unlike that path, every run is its own
problem row (a problem sampled twice in one call is two rows), and a result the layout would
refuse as a corrupt record (a duration not finite or negative, a success beyond its cap, more
results than G) raises `ValueError` here.

Dimension letters: B rollouts, P problems, G rollouts per problem, T tests, H references,
Y reference rows (`jaxopt_rl.dimensions`).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from jaxopt_rl.data.execution_table import (
    TIMING_CODE,
    ExecutionTable,
    record_batch,
    timed_duration,
)
from jaxopt_rl.data.references import reference_arrays
from jaxopt_rl.rewards.records import INCONCLUSIVE, STATUS_CODE, TEST_KIND_CODE, RecordBatch
from jaxopt_rl.rollouts.execute import timing_of
from jaxopt_rl.rollouts.problems import ProblemRun
from sandbox_cluster.api import Status, TestResult


def padded_width(count: int, multiple: int) -> int:
    """`count` rounded up to a multiple (at least one multiple), as the record layout pads."""
    return max(multiple, -(-max(count, 1) // multiple) * multiple)


def execution_table(runs: Sequence[ProblemRun], results_PG: Sequence[Sequence[Sequence[TestResult]]],
                    group_size: int, pad_multiple: int = 1,
                    embedded_is_fleet: bool = True) -> ExecutionTable:
    """The table of `results_PG[p][g][t]`, the result of rollout g of `runs[p]` on its test t
    (fewer than `group_size` rollouts: the rest are padding rows)."""
    if pad_multiple < 1 or group_size < 1:
        raise ValueError(f"pad_multiple and group_size must be >= 1, got {pad_multiple}, "
                         f"{group_size}")
    if len(runs) != len(results_PG) or not runs:
        raise ValueError(f"{len(results_PG)} result groups for {len(runs)} problems")
    num_p, num_g = len(runs), group_size
    num_t = padded_width(max(len(run.specs) for run in runs), pad_multiple)
    status_PGT = np.zeros((num_p, num_g, num_t), np.int8)
    duration_PGT = np.zeros((num_p, num_g, num_t), np.float32)
    rollout_mask_PG = np.zeros((num_p, num_g), bool)
    test_mask_PT = np.zeros((num_p, num_t), bool)
    kind_PT = np.zeros((num_p, num_t), np.int8)
    io_chars_PT = np.zeros((num_p, num_t), np.int32)
    cap_PT = np.zeros((num_p, num_t), np.float32)
    for p, (run, results_G) in enumerate(zip(runs, results_PG)):
        t, cap = len(run.specs), float(run.limits.time_s)
        if len(results_G) > num_g:
            raise ValueError(f"problem {run.problem_id!r} has {len(results_G)} rollouts, more "
                             f"than group_size={num_g}")
        test_mask_PT[p, :t] = True
        kind_PT[p, :t] = [TEST_KIND_CODE[s.test_kind] for s in run.specs]
        io_chars_PT[p, :t] = [s.io_chars for s in run.specs]
        cap_PT[p, :t] = cap
        status_PGT[p, len(results_G):] = INCONCLUSIVE  # a padding rollout has no verdict
        for g, results_T in enumerate(results_G):
            if len(results_T) != t:
                raise ValueError(f"problem {run.problem_id!r}, rollout {g}: {len(results_T)} "
                                 f"results for {t} tests")
            seconds_T = np.array([float(r.duration_s) for r in results_T])
            success_T = np.array([r.status is Status.SUCCESS for r in results_T])
            bad = ~np.isfinite(seconds_T) | (seconds_T < 0) | (success_T & (seconds_T > cap))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"problem {run.problem_id!r}, rollout {g}, test "
                                 f"{run.specs[i].test_id!r}: impossible {results_T[i].status} "
                                 f"duration {seconds_T[i]} under the cap {cap:g} s")
            codes_T = np.array([STATUS_CODE[r.status] for r in results_T], np.int8)
            timing_T = np.array([TIMING_CODE[timing_of(r, embedded_is_fleet)]
                                 for r in results_T], np.int8)
            status_PGT[p, g, :t] = codes_T
            duration_PGT[p, g, :t] = timed_duration(codes_T, seconds_T, cap, timing_T)
            rollout_mask_PG[p, g] = True
    return ExecutionTable(status_PGT=status_PGT, duration_PGT=duration_PGT,
                          rollout_mask_PG=rollout_mask_PG, test_mask_PT=test_mask_PT,
                          test_kind_PT=kind_PT, io_chars_PT=io_chars_PT, cap_PT=cap_PT)


def reference_block(runs: Sequence[ProblemRun], num_t: int,
                    pad_multiple: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """`(ref_duration_PTH, ref_mask_PTH)` of the runs' stored references under their tests'
    columns (`num_t` padded tests), references in order of first appearance per problem; a
    null stored duration is NaN and masked in (eq. 10 reads it at the cap)."""
    cells: list[tuple[int, int, int, float]] = []
    widest = 0
    for p, run in enumerate(runs):
        column = {spec.test_id: t for t, spec in enumerate(run.specs)}
        slot: dict[str, int] = {}
        seen: set[tuple[int, int]] = set()
        for ref in run.references:
            if ref.test_id not in column:
                raise ValueError(f"problem {run.problem_id!r}: reference {ref.reference_id!r} "
                                 f"on unknown test {ref.test_id!r}")
            h = slot.setdefault(ref.reference_id, len(slot))
            if (column[ref.test_id], h) in seen:
                raise ValueError(f"problem {run.problem_id!r}: duplicate reference "
                                 f"{ref.reference_id!r} on test {ref.test_id!r}")
            seen.add((column[ref.test_id], h))
            cells.append((p, column[ref.test_id], h,
                          np.nan if ref.duration_s is None else float(ref.duration_s)))
        widest = max(widest, len(slot))
    p_Y, t_Y, h_Y, duration_Y = (np.array(c) for c in zip(*cells)) if cells else (
        np.zeros(0, np.int64),) * 4
    return reference_arrays(p_Y, t_Y, h_Y, duration_Y,
                            (len(runs), num_t, padded_width(widest, pad_multiple)))


def results_batch(runs: Sequence[ProblemRun], results_PG, group_size: int,
                  pad_multiple: int = 1, embedded_is_fleet: bool = True) -> RecordBatch:
    """One `RecordBatch` for a whole sampler call: the table of `results_PG` (see
    `execution_table`) and each problem's stored references (`reference_block`)."""
    table = execution_table(runs, results_PG, group_size, pad_multiple, embedded_is_fleet)
    ref_duration_PTH, ref_mask_PTH = reference_block(runs, table.cap_PT.shape[1], pad_multiple)
    batch = record_batch(table, ref_duration_PTH, ref_mask_PTH)
    batch.validate()  # the layout's invariants, checked once (the reward call then skips it)
    return batch


__all__ = ["execution_table", "padded_width", "reference_block", "results_batch"]
