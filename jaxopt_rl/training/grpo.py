"""The GRPO recipe as pure array functions (docs/design/training.md §1): advantages, the clipped
loss, its diagnostics, the truncated importance-sampling weight, the SFT loss, and the token
log-probs the loss reads (whole, or in chunks of tokens that never hold the full logits).

Dimension letters: G rollouts of one prompt, B rows (rollouts, or packed rows of a train
batch), L token positions, V vocabulary.

Advantages. For a prompt with `G` rollouts, rewards `R_i` and generated-token counts `L_i`:

    mu = sum_j L_j R_j / sum_j L_j          (token-weighted prompt baseline)
    A_i = R_i - mu                          (no division by the group standard deviation)

With the token-weighted baseline the positive and negative gradient mass of a group cancel:
`sum_i L_i A_i = 0`. RiVER rewards are already advantages (`river=True` returns them as is).
Choices: padded rollouts (`mask_G` False) get advantage 0 and never enter the baseline; a group
whose real rollouts all have zero length falls back to the unweighted mean (its tokens carry no
gradient anyway; this only keeps the numbers finite); a NaN reward inside the mask poisons its
whole group: the batch builder (`training.batch`) drops undefined rewards (e.g. inconclusive
executions) before. `advantages` is plain NumPy (it runs on the host, once per group); every
other function here is JAX.

Loss (to minimise), with ``r = exp(logp - old_logp)`` per token:

    -sum(mask * min(r * A, clip(r, 1 - eps_low, 1 + eps_high) * A)) / horizon
        + kl_coef * sum(mask * k3) / horizon,      k3 = exp(ref - logp) - (ref - logp) - 1

`horizon` is fixed (rows x N for a batch of packed rows), never the realised token count, so a
token's gradient weight does not depend on how long the other rollouts of the batch were. A
batch split into microbatches passes the whole batch's horizon to every microbatch: the summed
microbatch gradients are then exactly the batch gradient.

The log-prob contract (what each log-prob is, and what is compared with what):

* ``logp[b, t]`` is the log-probability of the token AT position t given the tokens before it
  in its own segment: ``log_softmax(logits[b, t - 1])[tokens[b, t]]`` in float32 from the
  trainer's full forward pass over packed rows (`target_logprobs`; per-segment positions and
  segment ids, so packed trajectories never see each other). Position 0 of a segment has none
  (0, masked: a segment starts with its prompt).
* ``old_logp`` is the sampler's ``model_logprobs`` (`jaxopt_rl.sampling`): the same quantity
  computed on the decode path (prefill + KV cache) of the policy version that generated the
  rollout, from the RAW logits: temperature 1, no top-k / top-p truncation or renormalisation,
  float32. It is not the sampler's ``logprobs`` (the sampling distribution's), which differ as
  soon as temperature != 1 or a truncation is on. The paper samples at temperature 1 without
  top-p, where the two coincide; with another sampling method the ratio is taken against the
  raw model, which is the policy being trained, and the behaviour-policy mismatch is not
  corrected: the update then favours what the tempered sampler wrote. The paper trains at
  temperature 1; the CPU demo samples at 0.7 on purpose (configs/demo.yaml says why).
* ``ref_logp`` is `target_logprobs` under the frozen reference parameters.
* Mismatch diagnostics compare the trainer's ``logp`` under the CURRENT parameters (before the
  step's update) with the sampler's ``old_logp``. For a group sampled by the current policy
  version (synchronous mode, or staleness 0) the two differ only by numerics (decode path vs
  full forward, float rounding): ~1e-6 in float32 on CPU, larger in bf16. For a stale group
  the difference also holds the policy's change since then.
* Truncated importance sampling (optional, off by default): the ratio is taken against the
  trainer's own recomputation of the old policy, ``old_logp = stop_gradient(logp)`` (one
  optimizer step per batch, so the current parameters ARE the old trainer policy), and every
  token's term is weighted by ``w = min(exp(old_logp_trainer - logp_sampler), cap)``: the
  sampler/trainer gap (numerics and staleness) is corrected by a bounded weight instead of
  entering the clipped ratio.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
import numpy as np


def target_logprobs(
    logits_BLV: jax.Array, tokens_BL: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``(logp_BL, entropy_BL)`` aligned to target positions (see the contract above).

    ``logp_BL[:, t]`` is the log-prob of ``tokens_BL[:, t]`` under ``logits_BLV[:, t - 1]`` and
    ``entropy_BL[:, t]`` the entropy of that distribution; position 0 holds 0 for both."""
    logp_next, entropy_next = _next_token_logp_entropy(logits_BLV[:, :-1], tokens_BL[:, 1:])
    zero_B1 = jnp.zeros((tokens_BL.shape[0], 1), jnp.float32)
    return (
        jnp.concatenate([zero_B1, logp_next], axis=1),
        jnp.concatenate([zero_B1, entropy_next], axis=1),
    )


def chunked_target_logprobs(
    hidden_BLD: jax.Array,
    tokens_BL: jax.Array,
    project: Callable[[jax.Array], jax.Array],
    chunk: int,
) -> tuple[jax.Array, jax.Array]:
    """`target_logprobs` of ``project(hidden_BLD)`` (the logits), `chunk` positions at a time.

    The `[B, L, V]` logits never exist whole: a `lax.scan` projects one `[B, chunk, D]` slice to
    its logits, reduces them to log-prob and entropy, and drops them; the backward pass
    recomputes each chunk's logits (`jax.checkpoint`), so the pass holds `B * chunk * V` floats
    at a time instead of `B * L * V` (at 32k tokens and a 152k vocabulary, 20 GB a row)."""
    batch, tokens, width = hidden_BLD.shape
    count = tokens - 1  # the last position predicts nothing
    chunks = -(-count // chunk)
    pad = chunks * chunk - count
    h_BLD = jnp.pad(hidden_BLD[:, :-1], ((0, 0), (0, pad), (0, 0)))
    next_BL = jnp.pad(tokens_BL[:, 1:], ((0, 0), (0, pad)))
    h_ABLD = h_BLD.reshape(batch, chunks, chunk, width).transpose(1, 0, 2, 3)
    next_ABL = next_BL.reshape(batch, chunks, chunk).transpose(1, 0, 2)

    @functools.partial(jax.checkpoint, prevent_cse=False)
    def one_chunk(h_BLD, next_BL):
        return _next_token_logp_entropy(project(h_BLD), next_BL)

    _, (logp_ABL, entropy_ABL) = jax.lax.scan(
        lambda carry, xs: (carry, one_chunk(*xs)), None, (h_ABLD, next_ABL)
    )
    zero_B1 = jnp.zeros((batch, 1), jnp.float32)

    def unchunk(values_ABL):
        values_BL = values_ABL.transpose(1, 0, 2).reshape(batch, chunks * chunk)[:, :count]
        return jnp.concatenate([zero_B1, values_BL], axis=1)

    return unchunk(logp_ABL), unchunk(entropy_ABL)


def _next_token_logp_entropy(logits_BLV: jax.Array, next_BL: jax.Array):
    """``(logp_BL, entropy_BL)``: log-prob of ``next_BL`` and entropy under each position's
    logits, in float32."""
    logp_BLV = jax.nn.log_softmax(logits_BLV.astype(jnp.float32), axis=-1)
    logp_BL = jnp.take_along_axis(logp_BLV, next_BL[..., None], axis=-1)[..., 0]
    return logp_BL, -jnp.sum(jnp.exp(logp_BLV) * logp_BLV, axis=-1)


def _per_token_adv(adv: jax.Array, shape: tuple[int, ...]) -> jax.Array:
    """`adv` as `[B, L]`: a per-row `[B]` advantage is broadcast over the row's tokens; packed
    rows (several trajectories per row) pass a per-token `[B, L]` one."""
    adv = jnp.asarray(adv, jnp.float32)
    if adv.ndim == 1:
        adv = adv[:, None]
    return jnp.broadcast_to(adv, shape)


@dataclass(frozen=True)
class PolicyTokens:
    """What the clipped surrogate and its diagnostics read, per token (`[B, L]`): the trainer's
    `logp`, the `old_logp` the ratio is taken against, the loss `mask`, the advantage (`[B]` per
    row, or `[B, L]` per token for packed rows) and the optional truncated IS weight (no
    gradient) that weights each token's surrogate."""

    logp: jax.Array
    old_logp: jax.Array
    adv: jax.Array
    mask: jax.Array
    is_weight: jax.Array | None = None


def grpo_terms(
    tokens: PolicyTokens, *, eps_low: float, eps_high: float, ref_logp: jax.Array | None = None
) -> tuple[jax.Array, jax.Array]:
    """``(pg_sum, kl_sum)``: the clipped surrogate and the k3 KL to `ref_logp` summed over
    masked tokens (not divided by the horizon)."""
    logp, is_weight = tokens.logp, tokens.is_weight
    mask = jnp.asarray(tokens.mask, jnp.float32)
    adv_BL = _per_token_adv(tokens.adv, logp.shape)
    # Masked positions are zeroed before exp so padding can never overflow into inf * 0 = NaN.
    log_ratio = jnp.where(mask > 0, logp - tokens.old_logp, 0.0)
    ratio = jnp.exp(log_ratio)
    clipped = jnp.clip(ratio, 1.0 - eps_low, 1.0 + eps_high)
    surrogate = jnp.minimum(ratio * adv_BL, clipped * adv_BL)
    if is_weight is not None:
        surrogate = surrogate * jax.lax.stop_gradient(is_weight)
    pg_sum = jnp.sum(mask * surrogate)
    if ref_logp is None:
        return pg_sum, jnp.zeros((), jnp.float32)
    log_ref_ratio = jnp.where(mask > 0, ref_logp - logp, 0.0)
    k3 = jnp.exp(log_ref_ratio) - log_ref_ratio - 1.0
    return pg_sum, jnp.sum(mask * k3)


def grpo_loss(
    logp: jax.Array,
    old_logp: jax.Array,
    adv: jax.Array,
    mask: jax.Array,
    *,
    eps_low: float,
    eps_high: float,
    horizon: float,
    ref_logp: jax.Array | None = None,
    kl_coef: float = 0.0,
    is_weight: jax.Array | None = None,
) -> jax.Array:
    """The clipped GRPO loss of the module docstring (a scalar to minimise).

    `logp`, `old_logp`, `ref_logp`, `mask`: `[B, L]`; `adv`: `[B]` (or `[B, L]` per token, for
    packed rows); `horizon`: the fixed token horizon of the batch (rows x N)."""
    if ref_logp is None and kl_coef != 0.0:
        raise ValueError(f"kl_coef={kl_coef} needs ref_logp (the frozen reference's log-probs)")
    pg_sum, kl_sum = grpo_terms(
        PolicyTokens(logp, old_logp, adv, mask, is_weight),
        eps_low=eps_low, eps_high=eps_high, ref_logp=ref_logp,
    )
    return (-pg_sum + kl_coef * kl_sum) / horizon


def truncated_is_weight(
    trainer_logp: jax.Array, sampler_logp: jax.Array, mask: jax.Array, cap: float
) -> jax.Array:
    """``min(exp(trainer_logp - sampler_logp), cap)`` per token (1 at masked positions), with no
    gradient: the bounded correction of the sampler/trainer mismatch."""
    delta = jnp.where(jnp.asarray(mask) > 0, trainer_logp - sampler_logp, 0.0)
    return jax.lax.stop_gradient(jnp.minimum(jnp.exp(delta), cap))


def diagnostic_sums(
    tokens: PolicyTokens,
    *,
    eps_low: float,
    eps_high: float,
    sampler_logp: jax.Array | None = None,
    entropy: jax.Array | None = None,
) -> dict[str, jax.Array]:
    """Per-token statistics summed over masked tokens (``*_max`` keys: maxima), so microbatches
    combine by adding (and taking maxima); `finish_diagnostics` turns them into means.

    Clip fractions count the tokens whose gradient the clip removes: ``clip_low`` where
    ``A < 0`` and ``r < 1 - eps_low``, ``clip_high`` where ``A > 0`` and ``r > 1 + eps_high``.
    The mismatch compares the trainer's `logp` with the sampler's `sampler_logp`:
    ``|logp - sampler_logp|`` and the k3 estimate of KL(sampler || trainer),
    ``exp(d) - d - 1`` with ``d = logp - sampler_logp`` (the tokens were drawn by the sampler)."""
    logp, is_weight = jax.lax.stop_gradient(tokens.logp), tokens.is_weight
    mask = jnp.asarray(tokens.mask, jnp.float32)
    live = mask > 0
    adv_BL = _per_token_adv(tokens.adv, logp.shape)
    ratio = jnp.exp(jnp.where(live, logp - tokens.old_logp, 0.0))
    sums = {
        "tokens": jnp.sum(mask),
        "clip_low": jnp.sum(mask * ((adv_BL < 0) & (ratio < 1.0 - eps_low))),
        "clip_high": jnp.sum(mask * ((adv_BL > 0) & (ratio > 1.0 + eps_high))),
        "ratio": jnp.sum(mask * ratio),
        "ratio_max": jnp.max(jnp.where(live, ratio, -jnp.inf)),
    }
    if sampler_logp is not None:
        delta = jnp.where(live, logp - sampler_logp, 0.0)
        sums["logp_mismatch"] = jnp.sum(mask * jnp.abs(delta))
        sums["logp_mismatch_max"] = jnp.max(jnp.where(live, jnp.abs(delta), -jnp.inf))
        sums["mismatch_k3"] = jnp.sum(mask * (jnp.exp(delta) - delta - 1.0))
    if entropy is not None:
        sums["entropy"] = jnp.sum(mask * entropy)
    if is_weight is not None:
        sums["is_weight"] = jnp.sum(mask * is_weight)
    return sums


def combine_diagnostics(a: dict[str, jax.Array], b: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Two microbatches' `diagnostic_sums` as one (sums add, ``*_max`` keys take the maximum)."""
    return {
        key: jnp.maximum(a[key], b[key]) if key.endswith("_max") else a[key] + b[key] for key in a
    }


def finish_diagnostics(sums: dict[str, jax.Array]) -> dict[str, jax.Array]:
    """Means per masked token (fractions for the clip counts); maxima as they are."""
    tokens = jnp.maximum(sums["tokens"], 1.0)
    out = {}
    for key, value in sums.items():
        if key == "tokens" or key.endswith("_max"):
            out[key] = value
        else:
            out[key if key != "ratio" else "ratio_mean"] = value / tokens
    return out


def sft_loss(logp: jax.Array, mask: jax.Array, *, horizon: float | None = None) -> jax.Array:
    """Next-token cross-entropy on the masked (completion) tokens: ``-sum(mask * logp)`` divided
    by the number of masked tokens, or by a fixed `horizon` when given (as GRPO does, so that
    microbatches sum to the batch loss). `logp` from `target_logprobs`; the prompt is masked."""
    mask = jnp.asarray(mask, jnp.float32)
    denominator = jnp.maximum(jnp.sum(mask), 1.0) if horizon is None else horizon
    return sft_nll_sum(logp, mask) / denominator


def sft_nll_sum(logp: jax.Array, mask: jax.Array) -> jax.Array:
    """``-sum(mask * logp)`` over the masked tokens (padding's log-prob never read: a NaN or inf
    there cannot reach the sum); the train step sums it per microbatch."""
    mask = jnp.asarray(mask, jnp.float32)
    return -jnp.sum(mask * jnp.where(mask > 0, logp, 0.0))


def advantages(
    rewards_G: np.typing.ArrayLike,
    lengths_G: np.typing.ArrayLike,
    mask_G: np.typing.ArrayLike | None = None,
    river: bool = False,
) -> np.ndarray:
    """Advantages of every rollout, same shape as `rewards_G` (`[G]` or `[..., G]`), float32.
    Plain NumPy: the batch builder calls it once per group on the host, where a device call
    would cost a dispatch (and a compile per group size) for a handful of numbers."""
    rewards_G = np.asarray(rewards_G, np.float32)
    lengths_G = np.asarray(lengths_G, np.float32)
    if lengths_G.shape != rewards_G.shape:
        raise ValueError(f"lengths shape {lengths_G.shape} differs from rewards {rewards_G.shape}")
    mask_G = np.ones(rewards_G.shape, bool) if mask_G is None else np.asarray(mask_G, bool)
    if mask_G.shape != rewards_G.shape:
        raise ValueError(f"mask shape {mask_G.shape} differs from rewards {rewards_G.shape}")
    zero = np.float32(0.0)
    if river:
        return np.where(mask_G, rewards_G, zero)
    weight_G = np.where(mask_G, lengths_G, zero)
    reward_in_G = np.where(mask_G, rewards_G, zero)
    total_weight = np.sum(weight_G, axis=-1, keepdims=True)
    weighted_mean = np.sum(weight_G * reward_in_G, axis=-1, keepdims=True) / np.where(
        total_weight > 0, total_weight, np.float32(1.0))
    count = np.maximum(np.sum(mask_G, axis=-1, keepdims=True), 1).astype(np.float32)
    plain_mean = np.sum(reward_in_G, axis=-1, keepdims=True) / count
    baseline = np.where(total_weight > 0, weighted_mean, plain_mean)
    return np.where(mask_G, rewards_G - baseline, zero)
