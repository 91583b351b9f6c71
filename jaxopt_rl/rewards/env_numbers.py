"""`EnvNumbers`: the numeric knobs of an `EnvConfig`, as values the environment step can trace.

An `EnvConfig` is a static argument of the jitted environment: its kinds (filter, limit,
ranking, composition family and map, calibration, tie rule) decide which code runs, and its
numbers (thresholds, limits, percentiles, tolerances) are constants of the compiled program.
A caller that evaluates many environments of one *structure* (same kinds, other numbers) can
instead trace the numbers: `environment.environment_step(..., numbers=EnvNumbers)` under
`jax.vmap` compiles the structure once for a whole batch of values (the offline simulator does
this; `jaxopt_rl.simulator`).

  * `constants(env)`: the env's own numbers as Python values (None where a kind does not use
    one): what the online path reads, so its program is exactly the one of a static env;
  * `stack(envs)`: the numbers of environments of one structure as `[C]` arrays (0 where
    unused), the leading axis to vmap over;
  * `structure(env)`: the env with every traceable number set to a fixed placeholder (and
    name/description cleared), so environments that differ only in numbers compare equal.

What stays static (part of the structure): every `kind`, the filter aggregate and ranked-limit
aggregate, the ranking tie rule and unrankable policy, the composition family and map, the
calibration (alpha, beta_s), the service cap, the test sets, and whether an optional number is
set at all (`gates.quality_threshold`, `correctness_limit_s`).

The relative limit carries its percentile twice: `percentile` and `limit_quantile`, the
fraction `percentile / 100` computed in double precision on the host as the reference table
does, so that a traced relative limit is the table's quantile bit for bit.

Dimension letters: C environment configurations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np

from jaxopt_rl.rewards.env_config import EnvConfig

_FLOAT_FIELDS = ("threshold_s", "drop_percent", "limit_s", "percentile", "limit_quantile",
                 "correctness_limit_s", "timeout_tolerance", "quality_threshold",
                 "multitask_share")


@jax.tree_util.register_dataclass
@dataclasses.dataclass(frozen=True)
class EnvNumbers:
    """Numbers of one environment (scalars) or of C environments of one structure (`[C]`).

    threshold_s        filter.threshold_s (abs filter)
    max_chars          filter.max_chars (len filter), int32
    drop_percent       filter.drop_percent (rel filter)
    limit_s            limit.limit_s (absolute limit)
    percentile         limit.percentile (relative and ranked limits), in percent
    limit_quantile     percentile / 100 (relative limit; see the module docstring)
    correctness_limit_s  correctness_limit_s (when set)
    timeout_tolerance  gates.timeout_tolerance
    quality_threshold  gates.quality_threshold (when set)
    multitask_share    composition.multitask_share (multitask)
    """

    threshold_s: jax.Array | float | None
    max_chars: jax.Array | int | None
    drop_percent: jax.Array | float | None
    limit_s: jax.Array | float | None
    percentile: jax.Array | float | None
    limit_quantile: jax.Array | float | None
    correctness_limit_s: jax.Array | float | None
    timeout_tolerance: jax.Array | float | None
    quality_threshold: jax.Array | float | None
    multitask_share: jax.Array | float | None


def constants(env: EnvConfig) -> EnvNumbers:
    """The env's numbers as the Python values of its config (None where unused)."""
    percentile = env.limit.percentile
    return EnvNumbers(
        threshold_s=env.filter.threshold_s,
        max_chars=env.filter.max_chars,
        drop_percent=env.filter.drop_percent,
        limit_s=env.limit.limit_s,
        percentile=percentile,
        limit_quantile=None if percentile is None else float(percentile) / 100.0,
        correctness_limit_s=env.correctness_limit_s,
        timeout_tolerance=env.gates.timeout_tolerance,
        quality_threshold=env.gates.quality_threshold,
        multitask_share=env.composition.multitask_share,
    )


def stack(envs: Sequence[EnvConfig]) -> EnvNumbers:
    """`[C]` arrays of the numbers of `envs`, which must share one `structure` (ValueError
    otherwise). Unused numbers are 0."""
    if not envs:
        raise ValueError("stack needs at least one environment")
    shape = structure(envs[0])
    for env in envs[1:]:
        if structure(env) != shape:
            raise ValueError(f"environments {envs[0].name!r} and {env.name!r} differ in more "
                             "than their numbers; group them by structure(env) first")
    values = [constants(env) for env in envs]

    def column(name, dtype):
        return np.asarray([0 if getattr(v, name) is None else getattr(v, name) for v in values],
                          dtype)

    fields = {name: column(name, np.float32) for name in _FLOAT_FIELDS}
    return EnvNumbers(max_chars=column("max_chars", np.int32), **fields)


def structure(env: EnvConfig) -> EnvConfig:
    """`env` with its traceable numbers replaced by placeholders: equal for environments that
    one compiled program evaluates (see the module docstring)."""
    def placeholder(value, fixed):
        return None if value is None else fixed

    filt, limit, gates, comp = env.filter, env.limit, env.gates, env.composition
    return dataclasses.replace(
        env, name="structure", description="",
        correctness_limit_s=placeholder(env.correctness_limit_s, 1.0),
        filter=dataclasses.replace(filt, threshold_s=placeholder(filt.threshold_s, 1.0),
                                   max_chars=placeholder(filt.max_chars, 1),
                                   drop_percent=placeholder(filt.drop_percent, 0.0)),
        limit=dataclasses.replace(limit, limit_s=placeholder(limit.limit_s, 1.0),
                                  percentile=placeholder(limit.percentile, 100.0)),
        gates=dataclasses.replace(gates, timeout_tolerance=1.0,
                                  quality_threshold=placeholder(gates.quality_threshold, 0.5)),
        composition=dataclasses.replace(
            comp, multitask_share=placeholder(comp.multitask_share, 0.5)),
    )


__all__ = ["EnvNumbers", "constants", "stack", "structure"]
