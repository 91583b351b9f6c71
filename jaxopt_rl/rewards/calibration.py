"""Load-time sanitation of stored reference durations (docs/design/rewards.md §1, paper eq. 10).

Stored reference durations were measured in an older state of the execution service. Before any
filter, limit or ranking sees them they are sanitised and, optionally, moved onto the current
service scale by the affine drift correction `Gamma(d) = alpha * d + beta`
(docs/design/sandbox-timing.md §3.5; the fitted values there are alpha = 0.6306, beta = 0.0529 s):

    psi(d) = d if d > 0 and d is finite else cap
    d~     = min(cap, max(0, Gamma(psi(d))))

Choices:
  * a non-finite stored value (NaN, +inf) counts as invalid, like a non-positive one: the paper
    only says "invalid or non-positive"; NaN > 0 is false anyway, and +inf would otherwise reach
    the clamp and silently become the cap through a different path.
  * `cap_s` may be an array broadcastable to the durations (a per-test cap `tau_t`), so a problem
    run under a non-default cap is sanitised against its own cap.

Candidate durations are never passed through here: they are measured on the live scale.
Shapes are unconstrained (any `[..., H]`); the module has no dimension letters of its own.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

DEFAULT_CAP_S = 10.0


@jax.jit
def sanitize_reference_durations(
    duration: jax.typing.ArrayLike,
    alpha: jax.typing.ArrayLike = 1.0,
    beta: jax.typing.ArrayLike = 0.0,
    cap_s: jax.typing.ArrayLike = DEFAULT_CAP_S,
) -> jax.Array:
    """Return `min(cap, max(0, alpha * psi(d) + beta))` as float32, same shape as `duration`.

    With the default `alpha=1, beta=0` the correction is the identity and only `psi` and the
    clamp act. The result is defined for every entry, padded ones included; masks decide later
    which entries are used.
    """
    duration = jnp.asarray(duration, jnp.float32)
    cap = jnp.asarray(cap_s, jnp.float32)
    valid = jnp.isfinite(duration) & (duration > 0)
    psi = jnp.where(valid, duration, cap)
    corrected = jnp.asarray(alpha, jnp.float32) * psi + jnp.asarray(beta, jnp.float32)
    return jnp.clip(corrected, 0.0, cap)
