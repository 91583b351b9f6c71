"""Each problem's reference table, prepared once per run: `PreparedReferences`.

Reference durations are data-set constants (`rewards.reference_table`): preparing them (the
sanitised durations, QP ranks, filter aggregates, limit quantiles) on every reward call would
redo the same O(T·H²) work at every step. The rollout worker keeps one prepared table per
problem, made the first time the problem is scored, at the problem's own padded width
(`[1, T_p, H_p]`). A sampler call's table is those tables padded to the call's widest problem
and stacked along P, in call order. Preparation works problem by problem and test by test, and
a padded reference or test is unusable (its entries are read off a table prepared for an
all-unusable block of the call's shape, `_empty`), so the rewards are those of a table prepared
for the call's whole reference block: `tests/rollouts/test_references.py` checks both paths bit
for bit.

Dimension letters: P problems, T tests, H references.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.reference_table import ReferenceTable, prepare_references
from jaxopt_rl.rollouts.execution_table import padded_width, reference_block
from jaxopt_rl.rollouts.problems import ProblemRun


@functools.partial(jax.jit, static_argnames=("shapes",))
def _stack(empty: ReferenceTable, tables: tuple[ReferenceTable, ...], shapes) -> ReferenceTable:
    """`tables` (one problem each, `[1, T_p, H_p]`) written over rows of `empty`
    (`[P, T, H]`) and returned as one table."""

    def fill(path, empty_leaf, *leaves):
        name = jax.tree_util.keystr(path)
        rows = []
        for p, (leaf, (t, h)) in enumerate(zip(leaves, shapes)):
            if name.endswith("key_HTP"):  # [H, T, P]
                rows.append(empty_leaf[:, :, p:p + 1].at[:h, :t, :].set(leaf))
            elif empty_leaf.ndim == 3:  # [P, T, H]
                rows.append(empty_leaf[p:p + 1].at[:, :t, :h].set(leaf))
            else:  # [P, T]
                rows.append(empty_leaf[p:p + 1].at[:, :t].set(leaf))
        return jnp.concatenate(rows, axis=2 if name.endswith("key_HTP") else 0)

    return jax.tree_util.tree_map_with_path(fill, empty, *tables)


class PreparedReferences:
    """Problem id -> its prepared `ReferenceTable`, made once; thread-safe (async rollout
    workers share one)."""

    def __init__(self, env: EnvConfig, pad_multiple: int):
        self.env = env
        self.pad_multiple = pad_multiple
        self.prepared = 0  # problems prepared so far (each once per run)
        self._tables: dict[str, tuple[ReferenceTable, tuple[int, int]]] = {}
        self._lock = threading.Lock()

    def _one(self, run: ProblemRun) -> tuple[ReferenceTable, tuple[int, int]]:
        with self._lock:
            if run.problem_id not in self._tables:
                num_t = padded_width(len(run.specs), self.pad_multiple)
                duration_PTH, mask_PTH = reference_block([run], num_t, self.pad_multiple)
                table = prepare_references(duration_PTH, mask_PTH, self.env)
                self._tables[run.problem_id] = table, tuple(np.shape(duration_PTH)[1:])
                self.prepared += 1
            return self._tables[run.problem_id]

    @functools.cache  # noqa: B019 - a handful of call shapes per run, kept as long as self
    def _empty(self, prompts: int, num_t: int, num_h: int) -> ReferenceTable:
        shape = (prompts, num_t, num_h)
        return prepare_references(np.zeros(shape, np.float32), np.zeros(shape, bool), self.env)

    def table(self, runs: Sequence[ProblemRun], num_t: int, num_h: int) -> ReferenceTable:
        """The table of a call's problems (`runs`, in order) for a batch of `num_t` tests and
        `num_h` references."""
        tables, shapes = zip(*(self._one(run) for run in runs))
        if any(t > num_t or h > num_h for t, h in shapes):
            raise ValueError(f"a problem's references ({max(shapes)}) are wider than the batch "
                             f"({num_t} tests x {num_h} references)")
        return _stack(self._empty(len(runs), num_t, num_h), tuple(tables), shapes=tuple(shapes))
