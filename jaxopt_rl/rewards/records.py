"""`RecordBatch`: execution records as padded arrays with masks, the input of every reward kernel.

Dimension letters (used as array-name suffixes throughout `jaxopt_rl.rewards`):
  B rollouts in the batch, P problems in the batch, G rollouts per problem (B = P * G), T tests
  (of one problem, padded to the batch maximum), H reference solutions (padded), M hidden
  instances.

Grouped layout. A GRPO batch is P groups of G rollouts, and a RecordBatch is laid out that way:
rows `p * G .. p * G + G - 1` are the rollouts of problem `p`, so `x_BT.reshape(P, G, T)` is the
per-problem view at no cost and the reward kernels broadcast a problem's references over its
group instead of gathering them per rollout. `G = B // P`; a problem with fewer than G rollouts
is padded with dummy rollouts that `rollout_mask_B` marks False (the environment gives them NaN
rewards and flags them; `jaxopt_rl.data.execution_records` never lets them reach its outputs).
There is no rollout -> problem index to keep consistent: `problem_index_B` is derived from the
layout.

Reference durations are stored once per problem (`ref_duration_PTH`); this keeps a 16-rollout
group from carrying 16 copies of the same `[T, H]` block.

Test layout: every rollout of a problem, padding rollouts included, carries the same tests in the
same columns, so `test_mask_BT`, `test_kind_BT`, `io_chars_BT` and `cap_BT` are equal (where the
test exists) across a group. The environment (`jaxopt_rl.rewards.environment`) reads a
problem's `[P, T]` view through the first rollout of its group; `validate()` checks both
invariants, and `jaxopt_rl.data.execution_records` builds batches that satisfy them.

Status codes (`reward_status_BT`) are the three classes rewards see (docs/design/rewards.md §1) plus
one for a verdict the sandbox could not reach, which is never a program failure.
"""

from __future__ import annotations

import dataclasses
import weakref

import jax
import numpy as np

from sandbox_cluster.api import TEST_KINDS, Status

SUCCESS = 0
TIMEOUT = 1
FAILURE = 2
INCONCLUSIVE = 3

# The classes are the sandbox's (`Status.reward_class`, defined once in sandbox_cluster.api);
# here they only get array codes.
CLASS_CODE = {"success": SUCCESS, "timeout": TIMEOUT, "failure": FAILURE,
              "inconclusive": INCONCLUSIVE}
STATUS_CODE = {status: CLASS_CODE[status.reward_class] for status in Status}

_VALIDATED: weakref.WeakValueDictionary = weakref.WeakValueDictionary()  # id -> batch

# original, generated correctness, generated optimization (defined once in sandbox_cluster.api)
TEST_KIND_CODE = {kind: code for code, kind in enumerate(TEST_KINDS)}


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class RecordBatch:
    """A batch of executed rollouts in the grouped layout. Arrays are padded; masks say what is real.

    Fields (shapes use the dimension letters of the module docstring):
      status_BT          int8    SUCCESS / TIMEOUT / FAILURE / INCONCLUSIVE
      duration_BT        float32 measured wall seconds (a timeout recorded at the cap)
      test_mask_BT       bool    the test exists for this rollout's problem
      test_kind_BT       int8    index into TEST_KINDS
      io_chars_BT        int32   len(input) + len(expected output), for the length filter
      cap_BT             float32 the service cap tau_t the test ran under
      rollout_mask_B     bool    a real rollout (False: padding of a problem with < G rollouts)
      ref_duration_PTH   float32 stored reference durations, raw (sanitised by the kernels)
      ref_mask_PTH       bool    that stored duration exists and the reference is verified correct
    """

    status_BT: jax.Array
    duration_BT: jax.Array
    test_mask_BT: jax.Array
    test_kind_BT: jax.Array
    io_chars_BT: jax.Array
    cap_BT: jax.Array
    rollout_mask_B: jax.Array
    ref_duration_PTH: jax.Array
    ref_mask_PTH: jax.Array

    @property
    def num_rollouts(self) -> int:
        """B, padding rollouts included."""
        return self.status_BT.shape[0]

    @property
    def num_problems(self) -> int:
        return self.ref_duration_PTH.shape[0]

    @property
    def group_size(self) -> int:
        """G: rows per problem (B // P)."""
        return self.num_rollouts // max(self.num_problems, 1)

    @property
    def problem_index_B(self) -> np.ndarray:
        """The problem row of every rollout, `repeat(arange(P), G)` (a constant of the shapes)."""
        return np.repeat(np.arange(self.num_problems, dtype=np.int32), self.group_size)

    def validate(self) -> None:
        """Check shapes, the grouped layout and the shared test layout on the host; raise
        ValueError naming the bad field. A batch that passed is remembered by identity for as
        long as it lives, so the reward path's check on every call costs nothing for a batch
        checked before (a batch is a value: do not write into its NumPy arrays)."""
        if _VALIDATED.get(id(self)) is self:
            return
        p, g = self.check_shapes()
        self._check_test_layout(p, g)
        _VALIDATED[id(self)] = self

    def check_shapes(self) -> tuple[int, int]:
        """The shape part of `validate` (works on traced batches too): `(P, G)`."""
        if np.ndim(self.status_BT) != 2 or np.ndim(self.ref_duration_PTH) != 3:
            raise ValueError(f"RecordBatch: status_BT must be [B, T] and ref_duration_PTH "
                             f"[P, T, H], got {np.shape(self.status_BT)} and "
                             f"{np.shape(self.ref_duration_PTH)}")
        b, t = np.shape(self.status_BT)
        p, t_ref, h = np.shape(self.ref_duration_PTH)
        expected = {
            "duration_BT": (b, t),
            "test_mask_BT": (b, t),
            "test_kind_BT": (b, t),
            "io_chars_BT": (b, t),
            "cap_BT": (b, t),
            "rollout_mask_B": (b,),
            "ref_mask_PTH": (p, t_ref, h),
        }
        for name, shape in expected.items():
            actual = tuple(np.shape(getattr(self, name)))
            if actual != shape:
                raise ValueError(f"RecordBatch.{name}: shape {actual}, expected {shape}")
        if t_ref != t:
            raise ValueError(f"RecordBatch.ref_duration_PTH: {t_ref} tests, status_BT has {t}")
        if p == 0 or b % p:
            raise ValueError(f"RecordBatch: {b} rollouts do not split into groups of equal size "
                             f"over {p} problems (grouped layout: B = P * G, rows p*G .. p*G+G-1 "
                             "belong to problem p; pad short groups with masked rollouts)")
        return p, b // p

    def _check_test_layout(self, num_problems: int, group: int) -> None:
        """Rollouts of one problem share their test layout (see the module docstring)."""
        if group == 0:
            return
        mask_PGT = np.asarray(self.test_mask_BT).reshape(num_problems, group, -1)
        for name in ("test_mask_BT", "test_kind_BT", "io_chars_BT", "cap_BT"):
            values_PGT = np.asarray(getattr(self, name)).reshape(num_problems, group, -1)
            differ_PGT = values_PGT != values_PGT[:, :1]
            if name != "test_mask_BT":
                differ_PGT &= mask_PGT
            if differ_PGT.any():
                p, g, t = np.argwhere(differ_PGT)[0]
                raise ValueError(f"RecordBatch.{name}[{p * group + g}, {t}] differs from rollout "
                                 f"{p * group} of the same problem {p}: rollouts of a problem "
                                 "(padding rollouts included) must share their test layout")
