"""`RecordBatch`: execution records as padded arrays with masks, the input of every reward kernel.

Dimension letters (used as array-name suffixes throughout `jaxopt_rl.rewards`):
  B rollouts in the batch, P problems in the batch, T tests (of one problem, padded to the
  batch maximum), H reference solutions (padded), G rollouts per group, M hidden instances.

Reference durations are stored once per problem (`ref_duration_PTH`) and broadcast to the
rollouts of that problem through `problem_index_B`; this keeps a 16-rollout group from carrying
16 copies of the same `[T, H]` block.

Layout invariant: every rollout of a problem carries the same tests in the same columns, so
`test_mask_BT`, `test_kind_BT`, `io_chars_BT` and `cap_BT` are equal (where the test exists) for
rollouts with the same `problem_index_B`. The environment (`jaxopt_rl.rewards.environment`)
reads a problem's `[P, T]` view through any one of its rollouts; `validate()` checks it, and
`jaxopt_rl.data.execution_records` builds batches that satisfy it.

Status codes (`reward_status_BT`) are the three classes rewards see (spec rewards.md §1) plus one
for a verdict the sandbox could not reach, which is never a program failure.
"""

from __future__ import annotations

import dataclasses

import jax
import numpy as np

from sandbox_cluster.api import Status

SUCCESS = 0
TIMEOUT = 1
FAILURE = 2
INCONCLUSIVE = 3

STATUS_CODE = {
    Status.SUCCESS: SUCCESS,
    Status.TIMEOUT: TIMEOUT,
    Status.WRONG_ANSWER: FAILURE,
    Status.RUNTIME_ERROR: FAILURE,
    Status.MEMORY_LIMIT: FAILURE,
    Status.OUTPUT_LIMIT: FAILURE,
    Status.INFRA_ERROR: INCONCLUSIVE,
}

TEST_KINDS = ("T0", "T+", "TO")  # original, generated correctness, generated optimization
TEST_KIND_CODE = {kind: code for code, kind in enumerate(TEST_KINDS)}


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class RecordBatch:
    """A batch of executed rollouts. All arrays are padded; masks say what is real.

    Fields (shapes use the dimension letters of the module docstring):
      status_BT          int8    SUCCESS / TIMEOUT / FAILURE / INCONCLUSIVE
      duration_BT        float32 measured wall seconds (a timeout recorded at the cap)
      test_mask_BT       bool    the test exists for this rollout's problem
      test_kind_BT       int8    index into TEST_KINDS
      io_chars_BT        int32   len(input) + len(expected output), for the length filter
      cap_BT             float32 the service cap tau_t the test ran under
      problem_index_B    int32   row of this rollout's problem in the `_P..` arrays
      ref_duration_PTH   float32 stored reference durations, raw (sanitised by the kernels)
      ref_mask_PTH       bool    that stored duration exists and the reference is verified correct
    """

    status_BT: jax.Array
    duration_BT: jax.Array
    test_mask_BT: jax.Array
    test_kind_BT: jax.Array
    io_chars_BT: jax.Array
    cap_BT: jax.Array
    problem_index_B: jax.Array
    ref_duration_PTH: jax.Array
    ref_mask_PTH: jax.Array

    @property
    def num_rollouts(self) -> int:
        return self.status_BT.shape[0]

    def ref_duration_BTH(self) -> jax.Array:
        """Reference durations broadcast to rollouts (materialises `[B, T, H]`)."""
        return self.ref_duration_PTH[self.problem_index_B]

    def ref_mask_BTH(self) -> jax.Array:
        return self.ref_mask_PTH[self.problem_index_B]

    def validate(self) -> None:
        """Check shapes and dtypes on the host; raise ValueError naming the bad field."""
        b, t = np.shape(self.status_BT)
        p, t_ref, h = np.shape(self.ref_duration_PTH)
        expected = {
            "duration_BT": (b, t),
            "test_mask_BT": (b, t),
            "test_kind_BT": (b, t),
            "io_chars_BT": (b, t),
            "cap_BT": (b, t),
            "problem_index_B": (b,),
            "ref_mask_PTH": (p, t_ref, h),
        }
        for name, shape in expected.items():
            actual = tuple(np.shape(getattr(self, name)))
            if actual != shape:
                raise ValueError(f"RecordBatch.{name}: shape {actual}, expected {shape}")
        if t_ref != t:
            raise ValueError(f"RecordBatch.ref_duration_PTH: {t_ref} tests, status_BT has {t}")
        index = np.asarray(self.problem_index_B)
        if index.size and (index.min() < 0 or index.max() >= p):
            raise ValueError(f"RecordBatch.problem_index_B: values must lie in [0, {p})")
        self._check_layout(index, p)

    def _check_layout(self, index: np.ndarray, num_problems: int) -> None:
        """Rollouts of one problem share their test layout (see the module docstring)."""
        if not index.size:
            return
        representative = np.zeros(num_problems, np.int64)
        representative[index[::-1]] = np.arange(index.size)[::-1]  # the first rollout wins
        same_as = representative[index]
        mask = np.asarray(self.test_mask_BT)
        for name in ("test_mask_BT", "test_kind_BT", "io_chars_BT", "cap_BT"):
            values = np.asarray(getattr(self, name))
            differ = values != values[same_as]
            if name != "test_mask_BT":
                differ &= mask
            if differ.any():
                b, t = np.argwhere(differ)[0]
                raise ValueError(f"RecordBatch.{name}[{b}, {t}] differs from rollout "
                                 f"{same_as[b]} of the same problem {index[b]}: rollouts of a "
                                 "problem must share their test layout")
