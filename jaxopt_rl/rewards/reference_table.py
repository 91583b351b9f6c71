"""`ReferenceTable`: a problem set's reference durations, prepared once for an environment.

Reference durations are dataset constants: a training run scores the same problems against the
same references at every step. Everything an environment derives from the references alone is
computed once by `prepare_references` and passed to the environment
(`rewards(records, env, references=table)`):

  * the sanitised, calibrated durations of eq. 10 (docs/design/rewards.md §1), with NaN where a
    reference is unusable (the ranking kernels' keys; the mask is `~isnan`), and their `[H, T, P]`
    copy;
  * which tests carry a measured reference duration (`measured_PT`) and which lost every one
    (`lost_PT`): a reference that ran but whose stored duration is null, <= 0 or not finite.
    Eq. 10 reads a lost duration at the cap (`ranking.lost_references: cap`, the default) or,
    by choice, leaves it out (`drop`); either way the environment counts the lost tests and
    calls a problem without a measured duration on a used test unrankable (`environment`);
  * `1 / n_ref` per test;
  * each reference's count of faster references on each test under the environment's tie rule
    (the O(P·T·H²) part of QP; only when the environment ranks by QP);
  * each reference's mid-rank among the others (the ranked-reference limit; only when the
    environment's limit is `ranked`);
  * the per-test reference aggregate `dbar_t` of the environment's `abs` / `rel` filter, and
    the per-test reference quantile of its `relative` limit (a median or quantile sorts the
    `[P, T, H]` durations: ~0.1 s per step at P = 256 on a CPU if done in the step).

Without a table the environment prepares one from the batch before its step (the "cold" path),
so the two paths run the same compiled step on the same table (tested bit for bit). A table
that lacks ranks a call needs (prepared for another environment with the same calibration and
tie rule) gets them computed inside the step.

Ranks depend on the calibration only through ties that clamping at the cap creates (Gamma is
increasing), and on the tie rule. A table records the calibration `(alpha, beta_s, cap_s)` and
tie rule it was prepared with; the environment refuses a table prepared for other ones
(`check_table`). That the table describes the same problems, tests and references as the
batch's `ref_duration_PTH` is the caller's contract (the step checks the shape only):
`check_table(table, env, batch, recompute=True)` verifies it on the host by recomputing (for
tests and start-up checks, not for every step).

A data set's table can be prepared once for all N problems and cut per step with `take(rows)`.

Dimension letters: P problems, T tests, H references.
"""

from __future__ import annotations

import dataclasses
import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxopt_rl.rewards.calibration import sanitize_reference_durations
from jaxopt_rl.rewards.env_config import EnvConfig
from jaxopt_rl.rewards.filters import aggregate_reference_duration
from jaxopt_rl.rewards.pool import ReferencePool, reference_pool, reference_ranks
from jaxopt_rl.rewards.records import RecordBatch
from jaxopt_rl.rewards.reductions import masked_quantile


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class ReferenceTable:
    """References of P problems prepared for one calibration and tie rule.

    pool          the ranking kernels' `ReferencePool` (sanitised durations as keys, NaN where
                  unusable; QP ranks under `pool.ties`, or None when the environment does not
                  rank by QP)
    mid_rank_PTH  average-rule ranks among the usable references of the test (for
                  `limits.ranked_reference_limit`), or None when the environment does not use it
    dbar_PT       `filters.aggregate_reference_duration` under `dbar_aggregate` (abs / rel
                  filters), or None
    limit_quantile_PT   `limit_percentile` quantile of each test's references (relative
                  limit), or None
    measured_PT   bool: the test has a usable reference whose stored duration is a measurement
    lost_PT       bool: the test has usable references and every stored duration is lost
    alpha, beta_s, cap_s   static: the calibration and cap the durations were sanitised with
    lost_references   static: how lost durations were read (`cap` or `drop`)
    dbar_aggregate, limit_percentile   static: what `dbar_PT` / `limit_quantile_PT` hold (None
                  with them); an environment asking for another aggregate or percentile
                  computes its own in the step
    """

    pool: ReferencePool
    mid_rank_PTH: jax.Array | None
    measured_PT: jax.Array
    lost_PT: jax.Array
    alpha: float = dataclasses.field(metadata={"static": True})
    beta_s: float = dataclasses.field(metadata={"static": True})
    cap_s: float = dataclasses.field(metadata={"static": True})
    dbar_PT: jax.Array | None = None
    limit_quantile_PT: jax.Array | None = None
    dbar_aggregate: str | None = dataclasses.field(default=None, metadata={"static": True})
    limit_percentile: float | None = dataclasses.field(default=None, metadata={"static": True})
    lost_references: str = dataclasses.field(default="cap", metadata={"static": True})

    @property
    def duration_PTH(self) -> jax.Array:
        """Sanitised, calibrated durations; NaN where the reference is unusable."""
        return self.pool.key_PTH

    @property
    def mask_PTH(self) -> jax.Array:
        return self.pool.usable_PTH

    @property
    def ties(self) -> str:
        return self.pool.ties

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(np.shape(self.pool.key_PTH))

    def take(self, rows) -> ReferenceTable:
        """The table of problems `rows` (e.g. one step's problems out of a data set's table)."""
        rows = jnp.asarray(rows, jnp.int32)

        def take(array):
            return None if array is None else array[rows]

        return dataclasses.replace(
            self, pool=self.pool.take(rows), mid_rank_PTH=take(self.mid_rank_PTH),
            measured_PT=take(self.measured_PT), lost_PT=take(self.lost_PT),
            dbar_PT=take(self.dbar_PT), limit_quantile_PT=take(self.limit_quantile_PT))

    def dbar_for(self, aggregate: str) -> jax.Array | None:
        """The prepared filter aggregate if it is `aggregate`'s, else None (compute it)."""
        return self.dbar_PT if self.dbar_aggregate == aggregate else None

    def limit_quantile_for(self, percentile: float) -> jax.Array | None:
        """The prepared limit quantile if it is `percentile`'s, else None (compute it)."""
        return self.limit_quantile_PT if self.limit_percentile == percentile else None


def needs(env: EnvConfig, all_rankings: bool = False) -> tuple[bool, bool]:
    """`(qp_ranks, mid_ranks)`: which rank tables the environment's step reads."""
    ranks = bool(env.optimization_kinds) and (all_rankings or env.ranking.kind == "qp")
    return ranks, env.limit.kind == "ranked"


def _calibration(env: EnvConfig) -> tuple[float, float, float]:
    alpha, beta_s = env.calibration.alpha_beta
    return float(alpha), float(beta_s), float(env.service_cap_s)


def lost_durations(ref_duration_PTH, ref_mask_PTH) -> jax.Array:
    """Usable references whose stored duration is no measurement (null -> NaN, <= 0, or not
    finite): what psi of eq. 10 replaces by the cap. `[P, T, H]` bool."""
    raw_PTH = jnp.asarray(ref_duration_PTH, jnp.float32)
    return jnp.asarray(ref_mask_PTH, bool) & ~(jnp.isfinite(raw_PTH) & (raw_PTH > 0))


def _build(ref_duration_PTH, ref_mask_PTH, lost_PTH, env: EnvConfig, qp_ranks: bool,
           mid_ranks: bool) -> ReferenceTable:
    alpha, beta_s, cap_s = _calibration(env)
    duration_PTH = sanitize_reference_durations(ref_duration_PTH, alpha, beta_s, cap_s)
    mask_PTH = jnp.asarray(ref_mask_PTH, bool)
    lost_PTH = mask_PTH & jnp.asarray(lost_PTH, bool)
    measured_PT = jnp.any(mask_PTH & ~lost_PTH, axis=-1)
    lost_PT = jnp.any(mask_PTH, axis=-1) & ~measured_PT
    if env.ranking.lost_references == "drop":
        mask_PTH = mask_PTH & ~lost_PTH
    pool = reference_pool(duration_PTH, mask_PTH, env.ranking.ties, ranks=qp_ranks)
    mid_rank_PTH = None
    if mid_ranks:
        if qp_ranks and env.ranking.ties == "average":
            mid_rank_PTH = pool.rank_PTH
        else:
            mid_rank_PTH = reference_ranks(duration_PTH, mask_PTH, "average")
    dbar_PT = dbar_aggregate = None
    if env.filter.kind in ("abs", "rel"):
        dbar_aggregate = env.filter.aggregate
        dbar_PT = aggregate_reference_duration(duration_PTH, mask_PTH, how=dbar_aggregate)
    limit_quantile_PT = limit_percentile = None
    if env.limit.kind == "relative":
        limit_percentile = float(env.limit.percentile)
        limit_quantile_PT = masked_quantile(duration_PTH, mask_PTH, limit_percentile / 100.0)
    return ReferenceTable(pool=pool, mid_rank_PTH=mid_rank_PTH, measured_PT=measured_PT,
                          lost_PT=lost_PT, alpha=alpha, beta_s=beta_s,
                          cap_s=cap_s, dbar_PT=dbar_PT, limit_quantile_PT=limit_quantile_PT,
                          dbar_aggregate=dbar_aggregate, limit_percentile=limit_percentile,
                          lost_references=env.ranking.lost_references)


@functools.partial(jax.jit, static_argnames=("env", "qp_ranks", "mid_ranks"))
def _prepare_jit(ref_duration_PTH, ref_mask_PTH, lost_PTH, env, qp_ranks, mid_ranks):
    if lost_PTH is None:
        lost_PTH = lost_durations(ref_duration_PTH, ref_mask_PTH)
    return _build(ref_duration_PTH, ref_mask_PTH, lost_PTH, env, qp_ranks, mid_ranks)


def prepare_references(ref_duration_PTH, ref_mask_PTH, env: EnvConfig, *,
                       all_rankings: bool = False, lost_PTH=None) -> ReferenceTable:
    """Prepare raw stored reference durations `[P, T, H]` (as in `RecordBatch`) for `env`.

    One jitted call; the result is a pytree of device arrays to keep for the whole run.
    `all_rankings=True` also prepares QP ranks for an environment that does not rank by QP (so
    `rewards_and_signals(..., all_rankings=True)` finds them). `lost_PTH` says which stored
    durations are lost when the caller sanitised them already (evaluation replay calibrates
    on the host); by default it is read off the raw durations (`lost_durations`)."""
    if lost_PTH is not None and np.shape(lost_PTH) != np.shape(ref_duration_PTH):
        raise ValueError(f"lost_PTH shape {np.shape(lost_PTH)}, references "
                         f"{np.shape(ref_duration_PTH)}")
    qp_ranks, mid_ranks = needs(env, all_rankings)
    return _prepare_jit(ref_duration_PTH, ref_mask_PTH, lost_PTH, env=env, qp_ranks=qp_ranks,
                        mid_ranks=mid_ranks)


def check_table(table: ReferenceTable, env: EnvConfig, records: RecordBatch | None = None, *,
                recompute: bool = False) -> None:
    """Raise ValueError when `table` was prepared for another calibration or tie rule than
    `env`, or has another shape than `records`' references. With `recompute=True` (and concrete
    `records`), also recompute the table from the batch and name the first entry that differs
    (a start-up or test check: it costs a preparation)."""
    if not isinstance(table, ReferenceTable):
        raise TypeError(f"references must be a ReferenceTable (see prepare_references), got "
                        f"{type(table).__name__}")
    prepared = {"calibration alpha": table.alpha, "calibration beta_s": table.beta_s,
                "service_cap_s": table.cap_s, "ranking.ties": table.ties,
                "ranking.lost_references": table.lost_references}
    alpha, beta_s, cap_s = _calibration(env)
    wanted = {"calibration alpha": alpha, "calibration beta_s": beta_s, "service_cap_s": cap_s,
              "ranking.ties": env.ranking.ties,
              "ranking.lost_references": env.ranking.lost_references}
    for key, value in wanted.items():
        if prepared[key] != value:
            raise ValueError(f"ReferenceTable was prepared with {key}={prepared[key]!r}, "
                             f"environment {env.name!r} has {value!r}: prepare it for this "
                             "environment (prepare_references)")
    if records is None:
        return
    if table.shape != tuple(np.shape(records.ref_duration_PTH)):
        raise ValueError(f"ReferenceTable shape {table.shape} differs from the batch's references "
                         f"{tuple(np.shape(records.ref_duration_PTH))}")
    if not recompute or isinstance(records.ref_duration_PTH, jax.core.Tracer):
        return
    fresh = prepare_references(records.ref_duration_PTH, records.ref_mask_PTH, env)
    for name, got, want in (("durations", table.duration_PTH, fresh.duration_PTH),
                            ("measured tests", table.measured_PT, fresh.measured_PT),
                            ("lost tests", table.lost_PT, fresh.lost_PT),
                            ("ranks", table.pool.rank_PTH, fresh.pool.rank_PTH),
                            ("mid-ranks", table.mid_rank_PTH, fresh.mid_rank_PTH),
                            ("dbar", table.dbar_for(env.filter.aggregate), fresh.dbar_PT),
                            ("limit quantile", table.limit_quantile_for(env.limit.percentile),
                             fresh.limit_quantile_PT)):
        if got is None or want is None:
            continue
        got, want = np.asarray(got), np.asarray(want)
        differ = ~((got == want) | (np.isnan(got) & np.isnan(want)))
        if differ.any():
            index = tuple(int(i) for i in np.argwhere(differ)[0])
            raise ValueError(f"ReferenceTable {name}{list(index)} = {got[index]:g} but the "
                             f"batch's references give {want[index]:g}: the table belongs to "
                             "other problems, tests or references")


__all__ = ["ReferenceTable", "check_table", "lost_durations", "needs", "prepare_references"]
