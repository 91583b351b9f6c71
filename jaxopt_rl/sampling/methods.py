"""Sampling methods: tiny frozen dataclasses that turn next-token logits into tokens.

Dimension letters (`jaxopt_rl.dimensions`): B batch rows, V vocabulary.

Each method defines its *sampling distribution* through ``log_probs(logits_BV)`` (float32,
``-inf`` outside its support) and draws from it with ``sample(logits_BV, keys_B)``, which returns
the tokens and their log-probability under that same distribution. Keys are per row, so a row's
draw does not depend on the other rows of the batch.

* `Greedy`: the argmax (ties: lowest id); a point mass, so its log-prob is 0.
* `Temperature(t)`: ``softmax(logits / t)``.
* `TopK(k, t)`: the `k` largest logits (ties: lowest ids), renormalised at temperature `t`.
* `TopP(p, t, k=None)`: the smallest set of most likely tokens whose probability reaches `p`
  (nucleus), after the optional top-`k` cut, in the order `transformers` applies them
  (temperature, then top-k, then top-p).

Draws are ``jax.random.categorical``'s, token for token (the Gumbel-max trick on the same
per-row Gumbel noise), computed as `gumbel` + `first_argmax`: XLA:CPU lowers ``jnp.argmax`` to a
variadic (value, index) reduction that costs ~3x a max plus a min over the vocabulary, and a
decode step pays it once per token.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import jax
import jax.numpy as jnp

from jaxopt_rl.config import require


class SamplingMethod(Protocol):
    def log_probs(self, logits_BV: jax.Array) -> jax.Array: ...

    def sample(self, logits_BV: jax.Array, keys_B: jax.Array) -> tuple[jax.Array, jax.Array]: ...


class _Stochastic:
    """`sample` by drawing from `log_probs` with one key per row."""

    def log_probs(self, logits_BV: jax.Array) -> jax.Array:
        raise NotImplementedError

    def sample(self, logits_BV: jax.Array, keys_B: jax.Array) -> tuple[jax.Array, jax.Array]:
        logp_BV = self.log_probs(logits_BV)
        tokens_B = first_argmax(row_gumbel_noise(keys_B, logp_BV) + logp_BV)
        return tokens_B, jnp.take_along_axis(logp_BV, tokens_B[:, None], axis=-1)[:, 0]


@dataclass(frozen=True)
class Greedy:
    def log_probs(self, logits_BV: jax.Array) -> jax.Array:
        best_B = first_argmax(logits_BV)
        hit_BV = jnp.arange(logits_BV.shape[-1]) == best_B[:, None]
        return jnp.where(hit_BV, 0.0, -jnp.inf).astype(jnp.float32)

    def sample(self, logits_BV: jax.Array, keys_B: jax.Array) -> tuple[jax.Array, jax.Array]:
        del keys_B
        tokens_B = first_argmax(logits_BV)
        return tokens_B, jnp.zeros(tokens_B.shape, jnp.float32)


@dataclass(frozen=True)
class Temperature(_Stochastic):
    temperature: float = 1.0

    def __post_init__(self) -> None:
        _check_temperature(self.temperature)

    def log_probs(self, logits_BV: jax.Array) -> jax.Array:
        return jax.nn.log_softmax(logits_BV.astype(jnp.float32) / self.temperature, axis=-1)


@dataclass(frozen=True)
class TopK(_Stochastic):
    k: int
    temperature: float = 1.0

    def __post_init__(self) -> None:
        _check_temperature(self.temperature)
        require(self.k >= 1, "top_k", f"must be >= 1, got {self.k}")

    def log_probs(self, logits_BV: jax.Array) -> jax.Array:
        scaled_BV = logits_BV.astype(jnp.float32) / self.temperature
        return jax.nn.log_softmax(_keep_top_k(scaled_BV, self.k), axis=-1)


@dataclass(frozen=True)
class TopP(_Stochastic):
    p: float
    temperature: float = 1.0
    k: int | None = None

    def __post_init__(self) -> None:
        _check_temperature(self.temperature)
        require(0.0 < self.p <= 1.0, "top_p", f"must be in (0, 1], got {self.p}")
        require(self.k is None or self.k >= 1, "top_k", f"must be >= 1, got {self.k}")

    def log_probs(self, logits_BV: jax.Array) -> jax.Array:
        scaled_BV = logits_BV.astype(jnp.float32) / self.temperature
        if self.k is not None:
            scaled_BV = _keep_top_k(scaled_BV, self.k)
        logp_BV = jax.nn.log_softmax(scaled_BV, axis=-1)
        order_BV = jnp.argsort(-logp_BV, axis=-1, stable=True)
        sorted_prob_BV = jnp.exp(jnp.take_along_axis(logp_BV, order_BV, axis=-1))
        mass_before_BV = jnp.cumsum(sorted_prob_BV, axis=-1) - sorted_prob_BV
        keep_sorted_BV = mass_before_BV < self.p  # the first token always stays
        rows_B1 = jnp.arange(logp_BV.shape[0])[:, None]
        keep_BV = jnp.zeros_like(keep_sorted_BV).at[rows_B1, order_BV].set(keep_sorted_BV)
        return jax.nn.log_softmax(jnp.where(keep_BV, logp_BV, -jnp.inf), axis=-1)


def first_argmax(scores_BV: jax.Array) -> jax.Array:
    """``jnp.argmax(scores_BV, axis=-1)`` as int32 (ties and NaNs: the lowest index), computed as
    a max and a min so that XLA:CPU vectorises both."""
    vocab = scores_BV.shape[-1]
    best_B1 = jnp.max(scores_BV, axis=-1, keepdims=True)
    hit_BV = (scores_BV == best_B1) | jnp.isnan(scores_BV)  # argmax returns the first NaN
    index_V = jnp.arange(vocab, dtype=jnp.int32)
    return jnp.min(jnp.where(hit_BV, index_V, vocab), axis=-1)


def row_gumbel_noise(keys_B: jax.Array, like_BV: jax.Array) -> jax.Array:
    """The Gumbel noise ``jax.random.categorical(keys_B[b], ...)`` adds to row ``b``'s logits."""
    vocab, dtype = like_BV.shape[-1], like_BV.dtype
    return jax.vmap(lambda key: jax.random.gumbel(key, (vocab,), dtype))(keys_B)


def method_from_arguments(
    temperature: float = 1.0, top_k: int | None = None, top_p: float | None = None
) -> Greedy | Temperature | TopK | TopP:
    """The method `generate`'s keyword arguments describe; ``temperature == 0`` means greedy."""
    require(math.isfinite(temperature) and temperature >= 0, "temperature",
            f"must be finite and >= 0, got {temperature}")
    if temperature == 0:
        return Greedy()
    if top_p is not None and top_p < 1.0:
        return TopP(p=top_p, temperature=temperature, k=top_k)
    if top_p is not None:
        require(top_p == 1.0, "top_p", f"must be in (0, 1], got {top_p}")
    if top_k is not None:
        return TopK(k=top_k, temperature=temperature)
    return Temperature(temperature)


def _check_temperature(temperature: float) -> None:
    require(math.isfinite(temperature) and temperature > 0, "temperature",
            f"must be finite and > 0 (use Greedy for 0), got {temperature}")


def _keep_top_k(scores_BV: jax.Array, k: int) -> jax.Array:
    """`scores` with all but the `k` largest entries per row set to -inf (ties: lowest ids)."""
    k = min(k, scores_BV.shape[-1])
    _, top_BK = jax.lax.top_k(scores_BV, k)
    rows_B1 = jnp.arange(scores_BV.shape[0])[:, None]
    keep_BV = jnp.zeros(scores_BV.shape, bool).at[rows_B1, top_BK].set(True)
    return jnp.where(keep_BV, scores_BV, -jnp.inf)
