"""References prepared for ranking (`ReferencePool`), and the loop primitive of every count.

A problem set's reference durations `[P, T, H]` (already sanitised) become, once:
  * keys: the duration where the reference is usable, NaN elsewhere. Every comparison with NaN
    is false, so padding drops out of all counts without a separate mask;
  * an H-major, T-before-P copy of the keys (`[H, T, P]`), so that the loop over references
    reads one contiguous `[T, P]` slice per step, in the T-major layout of the loops over tests;
  * `1 / n_ref` per test;
  * each reference's count of faster references on the test (`reference_ranks`, ties halved
    under the average rule): the O(P·T·H²) part of QP, H loop passes of `[P, T, H]` compares
    (no `[P, T, H, H]` pairwise tensor, no sort: `jnp.sort` of `[256, 128, 64]` takes ~175 ms
    on XLA CPU).
References are dataset constants, so a training run prepares them once (the environment does
it through `reference_table`) and every step's kernels (`percentiles`) read the pool.

Dimension letters: P problems, T tests, H references.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards.checks import check_ties
from jaxopt_rl.rewards.reductions import sum_over

DEFAULT_TIE_TOLERANCE = 1e-6





@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ReferencePool:
    """A problem set's references, prepared for ranking (`reference_pool`).

    key_PTH    float32  the duration where the reference is usable, NaN elsewhere
    key_HTP    float32  the same, `[H, T, P]` (the candidate loop reads one reference per step)
    inv_n_PT   float32  1 / number of usable references on the test; 0 where there is none
    rank_PTH   float32  other usable references faster on the test (ties halved under
                        "average"), 0 where unusable; None when prepared without ranks (QAR
                        and per-test percentiles need none, QP does)
    ties       static   the tie rule every count of this pool uses
    """

    key_PTH: jax.Array
    key_HTP: jax.Array
    inv_n_PT: jax.Array
    rank_PTH: jax.Array | None
    ties: str = dataclasses.field(metadata={"static": True})

    @property
    def num_problems(self) -> int:
        return self.key_PTH.shape[0]

    @property
    def usable_PTH(self) -> jax.Array:
        return ~jnp.isnan(self.key_PTH)

    def with_ranks(self) -> ReferencePool:
        """This pool with its QP ranks (computed here, in the caller's trace, when missing)."""
        if self.rank_PTH is not None:
            return self
        return dataclasses.replace(self, rank_PTH=_rank_counts(self.key_PTH, self.ties))

    def take(self, rows) -> ReferencePool:
        """The pool of problems `rows` (e.g. this step's problems out of a whole data set)."""
        rows = jnp.asarray(rows, jnp.int32)
        return ReferencePool(
            key_PTH=self.key_PTH[rows],
            key_HTP=self.key_HTP[:, :, rows],
            inv_n_PT=self.inv_n_PT[rows],
            rank_PTH=None if self.rank_PTH is None else self.rank_PTH[rows],
            ties=self.ties,
        )


def _materialized(*arrays):
    """The arrays computed once, before the loops that read them: without the barrier XLA may
    fuse their producers (a transpose, a sanitisation) into every loop step."""
    return jax.lax.optimization_barrier(arrays)


def _rank_counts(key_PTH: jax.Array, ties: str) -> jax.Array:
    """`reference_ranks` on NaN-keyed durations: H passes of `[P, T, H]` compares, each reading
    one contiguous `[P, T]` slice of an H-major copy."""
    key_PTH, key_HPT = _materialized(key_PTH, jnp.moveaxis(key_PTH, 2, 0))

    def beaten_by(other):
        other_PT1 = key_HPT[other][..., None]
        count_PTH = (other_PT1 < key_PTH).astype(jnp.float32)
        if ties == "average":
            count_PTH = count_PTH + 0.5 * (other_PT1 == key_PTH)
        return count_PTH

    count_PTH = sum_over(key_PTH.shape[-1], beaten_by, key_PTH.shape)
    if ties == "average":
        count_PTH = count_PTH - 0.5  # a reference ties with itself once
    return jnp.where(jnp.isnan(key_PTH), 0.0, count_PTH)


def _key(ref_PTH, ref_mask_PTH) -> jax.Array:
    return jnp.where(jnp.asarray(ref_mask_PTH, bool), jnp.asarray(ref_PTH, jnp.float32), jnp.nan)


def _keys(ref_PTH, ref_mask_PTH) -> tuple[jax.Array, jax.Array]:
    key_PTH = _key(ref_PTH, ref_mask_PTH)
    return key_PTH, jnp.transpose(key_PTH, (2, 1, 0))


def _pool(ref_PTH, ref_mask_PTH, ref_rank_PTH, ties: str, ranks: bool) -> ReferencePool:
    key_PTH, key_HTP = _materialized(*_keys(ref_PTH, ref_mask_PTH))
    n_ref_PT = jnp.sum(jnp.asarray(ref_mask_PTH, bool), axis=-1).astype(jnp.float32)
    if ref_rank_PTH is not None:
        rank_PTH = jnp.where(jnp.isnan(key_PTH), 0.0, jnp.asarray(ref_rank_PTH, jnp.float32))
    else:
        rank_PTH = _rank_counts(key_PTH, ties) if ranks else None
    return ReferencePool(
        key_PTH=key_PTH,
        key_HTP=key_HTP,
        inv_n_PT=jnp.where(n_ref_PT > 0, 1.0 / jnp.maximum(n_ref_PT, 1.0), 0.0),
        rank_PTH=rank_PTH,
        ties=ties,
    )


build_pool = jax.jit(_pool, static_argnames=("ties", "ranks"))


def check_references(ref_PTH, ref_mask_PTH, ref_rank_PTH=None) -> None:
    if np.ndim(ref_PTH) != 3:
        raise ValueError(f"references must be [P, T, H], got shape {np.shape(ref_PTH)}")
    if np.shape(ref_mask_PTH) != np.shape(ref_PTH):
        raise ValueError(
            f"ref_mask shape {np.shape(ref_mask_PTH)} differs from ref_duration {np.shape(ref_PTH)}"
        )
    if ref_rank_PTH is not None and np.shape(ref_rank_PTH) != np.shape(ref_PTH):
        raise ValueError(f"ref_rank shape {np.shape(ref_rank_PTH)}, expected {np.shape(ref_PTH)}")


def reference_pool(
    ref_PTH, ref_mask_PTH, ties: str = "min", *, ranks: bool = True, ref_rank_PTH=None
) -> ReferencePool:
    """Prepare references `[P, T, H]` (durations already sanitised) for the grouped kernels.

    `ranks=False` skips the reference ranks (QAR and per-test percentiles do not need them);
    `ref_rank_PTH` passes ranks computed ahead (`reference_ranks` of the same durations, mask
    and tie rule)."""
    check_ties(ties)
    check_references(ref_PTH, ref_mask_PTH, ref_rank_PTH)
    return build_pool(ref_PTH, ref_mask_PTH, ref_rank_PTH, ties=ties, ranks=ranks)


@functools.partial(jax.jit, static_argnames=("ties",))
def _reference_ranks_jit(ref_PTH, ref_mask_PTH, ties):
    return _rank_counts(_key(ref_PTH, ref_mask_PTH), ties)


def reference_ranks(ref_PTH, ref_mask_PTH, ties: str = "min") -> jax.Array:
    """For every usable reference, how many other usable references of its problem are faster
    on that test (ties count one half under `ties="average"`): `[P, T, H]`, 0 where unusable.

    This is the per-problem part of QP, O(P·T·H²); `reference_pool` computes it once per
    problem set."""
    check_ties(ties)
    check_references(ref_PTH, ref_mask_PTH)
    return _reference_ranks_jit(ref_PTH, ref_mask_PTH, ties=ties)


__all__ = ["DEFAULT_TIE_TOLERANCE", "ReferencePool", "build_pool", "check_references",
           "reference_pool", "reference_ranks"]
