"""GRPO advantages (spec training.md §1). The clipped loss lands here in a later issue.

For a prompt with `G` rollouts, rewards `R_i` and generated-token counts `L_i`:

    mu = sum_j L_j R_j / sum_j L_j          (token-weighted prompt baseline)
    A_i = R_i - mu                          (no division by the group standard deviation)

With the token-weighted baseline the positive and negative gradient mass of a group cancel:
`sum_i L_i A_i = 0`. RiVER rewards are already advantages (`river=True` returns them as is).

Choices:
  * padded rollouts (`mask_G` False) get advantage 0 and never enter the baseline.
  * a group whose real rollouts all have zero length falls back to the unweighted mean (its
    tokens carry no gradient anyway; this only keeps the numbers finite).
  * a NaN reward inside the mask poisons its whole group: the caller drops undefined rewards
    (e.g. inconclusive executions) by masking them, never by letting them through.

Dimension letters: G rollouts of one prompt (the last axis); any leading axes (e.g. P prompts)
are independent groups.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp


@functools.partial(jax.jit, static_argnames=("river",))
def advantages(
    rewards_G: jax.typing.ArrayLike,
    lengths_G: jax.typing.ArrayLike,
    mask_G: jax.typing.ArrayLike | None = None,
    river: bool = False,
) -> jax.Array:
    """Advantages of every rollout, same shape as `rewards_G` (`[G]` or `[..., G]`), float32."""
    rewards_G = jnp.asarray(rewards_G, jnp.float32)
    lengths_G = jnp.asarray(lengths_G, jnp.float32)
    if lengths_G.shape != rewards_G.shape:
        raise ValueError(f"lengths shape {lengths_G.shape} differs from rewards {rewards_G.shape}")
    mask_G = jnp.ones(rewards_G.shape, bool) if mask_G is None else jnp.asarray(mask_G, bool)
    if mask_G.shape != rewards_G.shape:
        raise ValueError(f"mask shape {mask_G.shape} differs from rewards {rewards_G.shape}")
    if river:
        return jnp.where(mask_G, rewards_G, 0.0)
    weight_G = jnp.where(mask_G, lengths_G, 0.0)
    reward_in_G = jnp.where(mask_G, rewards_G, 0.0)
    total_weight = jnp.sum(weight_G, axis=-1, keepdims=True)
    weighted_mean = jnp.sum(weight_G * reward_in_G, axis=-1, keepdims=True) / jnp.where(
        total_weight > 0, total_weight, 1.0
    )
    count = jnp.maximum(jnp.sum(mask_G, axis=-1, keepdims=True), 1)
    plain_mean = jnp.sum(reward_in_G, axis=-1, keepdims=True) / count
    baseline = jnp.where(total_weight > 0, weighted_mean, plain_mean)
    return jnp.where(mask_G, rewards_G - baseline, 0.0)
