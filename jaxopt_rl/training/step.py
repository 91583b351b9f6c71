"""The ONE training jit: ``train_step(state, batch) -> (state, metrics)`` for GRPO and SFT.

Dimension letters: U microbatches, R rows per microbatch, L token positions, V vocabulary.

The step recomputes every token's log-prob under the current parameters on packed rows
(per-segment positions and segment ids: the model's segment mask keeps packed trajectories
apart), accumulates the gradient over the U microbatches in a `lax.scan` (each microbatch's
loss is divided by the WHOLE batch's horizon ``U * R * N``, so the sum of the microbatch
gradients is the batch gradient, with no rescaling), applies the optimizer once, and returns
scalar metrics. A batch with no loss token skips the passes (its gradient is zero) and still
takes the optimizer step. `make_train_step` states the shardings at the jit call: the state
keeps the layout it was born with, rows split over the batch axes, metrics replicated, and the
state's buffers are donated (updated in place).

Losses (see `jaxopt_rl.training.grpo` for the maths and the log-prob contract):

* ``grpo``: the clipped surrogate against the sampler's log-probs in ``batch.old_logp``; with
  ``tis_cap`` set, against the trainer's own log-probs and weighted by the truncated IS weight;
  with ``kl_coef > 0``, plus k3 to ``state.ref_params``.
* ``sft``: next-token cross-entropy on ``batch.loss_mask`` tokens, averaged over the batch's
  completion tokens (``batch.adv`` / ``old_logp`` unused).

Compute runs in ``model.compute_dtype`` (the model's own setting); log-probs, the loss and the
metrics are float32.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import jax
import jax.numpy as jnp
import optax
from flax import nnx

from jaxopt_rl.model import partitioning
from jaxopt_rl.training import grpo
from jaxopt_rl.training.config import GRPOConfig
from jaxopt_rl.training.mesh import microbatch_sharding, replicated
from jaxopt_rl.training.packing import PackedBatch
from jaxopt_rl.training.state import TrainState


@dataclass(frozen=True)
class StepSettings:
    """Static knobs of the step (hashable: part of the compiled function's identity)."""

    loss: Literal["grpo", "sft"] = "grpo"
    eps_low: float = 0.2
    eps_high: float = 0.28
    horizon: int = 32768  # N, tokens per row
    kl_coef: float = 0.0
    tis_cap: float | None = None

    @classmethod
    def from_config(cls, config: GRPOConfig, loss: Literal["grpo", "sft"] = "grpo"):
        return cls(
            loss=loss,
            eps_low=config.eps_low,
            eps_high=config.eps_high,
            horizon=config.horizon,
            kl_coef=config.kl_coef,
            tis_cap=config.tis_cap,
        )


def token_logprobs(
    graphdef: nnx.GraphDef, params: nnx.State, tokens_RL, positions_RL, segment_ids_RL
) -> tuple[jax.Array, jax.Array]:
    """``(logp_RL, entropy_RL)`` of each token given the earlier tokens of its segment; with
    ``model.logprob_chunk`` set, `chunk` tokens of logits at a time (`grpo` says how)."""
    model = nnx.merge(graphdef, params)
    chunk = model.config.logprob_chunk
    if not chunk:
        return grpo.target_logprobs(model(tokens_RL, positions_RL, segment_ids_RL), tokens_RL)
    hidden_RLD = model.hidden_states(tokens_RL, positions_RL, segment_ids_RL)
    return grpo.chunked_target_logprobs(hidden_RLD, tokens_RL, model.logits, chunk)


def _microbatch_terms(graphdef, settings: StepSettings, horizon_tokens, params, ref_params, mb):
    """(loss, (pg_sum, kl_sum, diagnostic sums)) of one microbatch; loss / whole-batch horizon."""
    logp, entropy = token_logprobs(graphdef, params, mb.tokens, mb.positions, mb.segment_ids)
    mask = mb.loss_mask
    if settings.loss == "sft":
        nll_sum = grpo.sft_nll_sum(logp, mask)
        sums = {"tokens": jnp.sum(mask), "entropy": jnp.sum(mask * entropy)}
        return nll_sum / horizon_tokens, (nll_sum, jnp.zeros(()), sums)
    is_weight = None
    old_logp = mb.old_logp
    if settings.tis_cap is not None:
        old_logp = jax.lax.stop_gradient(logp)
        is_weight = grpo.truncated_is_weight(old_logp, mb.old_logp, mask, settings.tis_cap)
    ref_logp = None
    if settings.kl_coef > 0:
        ref_logp, _ = token_logprobs(graphdef, ref_params, mb.tokens, mb.positions, mb.segment_ids)
        ref_logp = jax.lax.stop_gradient(ref_logp)
    clip = dict(eps_low=settings.eps_low, eps_high=settings.eps_high)
    # the loss of docs/design/training.md §1 as written; its two sums again for the metrics (the
    # same expressions in one trace: XLA computes them once)
    loss = grpo.grpo_loss(logp, old_logp, mb.adv, mask, **clip, horizon=horizon_tokens,
                          ref_logp=ref_logp, kl_coef=settings.kl_coef, is_weight=is_weight)
    tokens = grpo.PolicyTokens(logp, old_logp, mb.adv, mask, is_weight)
    pg_sum, kl_sum = grpo.grpo_terms(tokens, **clip, ref_logp=ref_logp)
    sums = grpo.diagnostic_sums(tokens, **clip, sampler_logp=mb.old_logp, entropy=entropy)
    return loss, (pg_sum, kl_sum, sums)


def train_step(
    graphdef: nnx.GraphDef,
    optimizer: optax.GradientTransformation,
    settings: StepSettings,
    param_shardings,
    state: TrainState,
    batch: PackedBatch,
    learning_rate=None,
) -> tuple[TrainState, dict[str, jax.Array]]:
    """One optimizer step on a `[U, R, L]` batch (see the module docstring); `learning_rate`
    (``step -> lr``, the optimizer's schedule) only adds the step's rate to the metrics."""
    microbatches, rows, _ = batch.tokens.shape
    if settings.loss == "sft":  # mean over the batch's completion tokens
        horizon_tokens = jnp.maximum(jnp.sum(batch.loss_mask), 1.0)
    else:  # the fixed horizon: rows x N
        horizon_tokens = jnp.float32(microbatches * rows * settings.horizon)
    grad_fn = jax.grad(
        lambda p, mb: _microbatch_terms(graphdef, settings, horizon_tokens, p, state.ref_params,
                                        mb),
        has_aux=True,
    )

    def constrain(tree):
        if param_shardings is None:
            return tree
        return jax.lax.with_sharding_constraint(tree, param_shardings)

    def accumulate(carry, mb):
        grads, pg_sum, kl_sum, sums = carry
        g, (pg, kl, s) = grad_fn(state.params, mb)
        grads = constrain(jax.tree.map(jnp.add, grads, g))
        return (grads, pg_sum + pg, kl_sum + kl, grpo.combine_diagnostics(sums, s)), None

    first = jax.tree.map(lambda a: a[0], batch)
    _, (_, _, sums_shape) = jax.eval_shape(grad_fn, state.params, first)
    init_sums = {
        k: jnp.full(v.shape, -jnp.inf if k.endswith("_max") else 0.0, v.dtype)
        for k, v in sums_shape.items()
    }
    zeros = constrain(jax.tree.map(jnp.zeros_like, state.params))
    init = (zeros, jnp.zeros(()), jnp.zeros(()), init_sums)
    # A batch without one loss token (every group of the step carried no signal: all its rows
    # are padding) has a gradient of exactly zero, whatever the loss; `cond` then skips the
    # forward and backward passes, and the optimizer still takes its step on the zero gradient,
    # so the result is the one the full pass would give.
    grads, pg_sum, kl_sum, sums = jax.lax.cond(
        jnp.any(batch.loss_mask > 0),
        lambda: jax.lax.scan(accumulate, init, batch)[0],
        lambda: init,
    )

    updates, opt_state = optimizer.update(grads, state.opt_state, state.params)
    params = optax.apply_updates(state.params, updates)
    rng = jax.random.key_data(jax.random.split(jax.random.wrap_key_data(state.rng))[0])
    new_state = state.replace(params=params, opt_state=opt_state, step=state.step + 1, rng=rng)

    metrics = grpo.finish_diagnostics(sums)
    if settings.loss == "sft":
        metrics["loss"] = pg_sum / horizon_tokens
    else:
        metrics["pg_loss"] = -pg_sum / horizon_tokens
        metrics["kl"] = kl_sum / horizon_tokens
        metrics["loss"] = metrics["pg_loss"] + settings.kl_coef * metrics["kl"]
    metrics["grad_norm"] = optax.tree.norm(grads)
    metrics["update_norm"] = optax.tree.norm(updates)
    metrics["param_norm"] = optax.tree.norm(params)
    if learning_rate is not None:
        metrics["learning_rate"] = jnp.asarray(learning_rate(state.step), jnp.float32)
    return new_state, metrics


def make_train_step(
    graphdef: nnx.GraphDef,
    optimizer: optax.GradientTransformation,
    settings: StepSettings,
    shardings: TrainState,
    mesh,
    rows_per_microbatch: int,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
    learning_rate=None,
):
    """The jitted ``(state, batch) -> (state, metrics)``: explicit in/out shardings, the state's
    buffers donated. Put batches with `batch_sharding(...)` (rows over the batch axes). Pass
    the optimizer's schedule as `learning_rate` to log it (`state.learning_rate_schedule`)."""
    rows = microbatch_sharding(mesh, rows_per_microbatch, rules)
    batch_shardings = PackedBatch(rows, rows, rows, rows, rows, rows)

    def step(state, batch):
        with partitioning.layout(mesh, rules):  # activations and Pallas kernels follow the rules
            return train_step(graphdef, optimizer, settings, shardings.params, state, batch,
                              learning_rate)

    return jax.jit(
        step,
        in_shardings=(shardings, batch_shardings),
        out_shardings=(shardings, replicated(mesh)),
        donate_argnums=(0,),
    )


def batch_sharding(mesh, rows_per_microbatch: int, rules=partitioning.DEFAULT_RULES):
    """The sharding of every array of a `[U, R, L]` train batch."""
    return microbatch_sharding(mesh, rows_per_microbatch, rules)
