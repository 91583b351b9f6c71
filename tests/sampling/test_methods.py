"""Sampling methods against NumPy references of their distributions, plus sampling properties."""

import hypothesis.extra.numpy as hnp
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from jaxopt_rl.config import ConfigError
from jaxopt_rl.sampling import Greedy, Temperature, TopK, TopP, method_from_arguments
from jaxopt_rl.sampling.methods import first_argmax

B, V = 3, 16
# half-integers make ties common, so tie-breaking is exercised
logits_strategy = hnp.arrays(np.float32, (B, V), elements=st.integers(-12, 12).map(lambda x: x / 2))


def log_softmax(x):
    x = np.asarray(x, np.float64)
    finite = np.isfinite(x)
    shifted = np.where(finite, x - x[finite].max(), -np.inf)
    return shifted - np.log(np.exp(shifted).sum())


def reference_top_k(row, k):
    order = sorted(range(len(row)), key=lambda i: (-row[i], i))
    keep = np.zeros(len(row), bool)
    keep[order[:k]] = True
    return np.where(keep, row, -np.inf)


def reference_top_p(row, p):
    """Keep most likely tokens (ties: lower id first) until their mass reaches p; also return
    the smallest distance of a running mass to p (boundary cases depend on rounding)."""
    logp = log_softmax(row)
    order = sorted(range(len(row)), key=lambda i: (-logp[i], i))
    keep, mass, closest = np.zeros(len(row), bool), 0.0, np.inf
    for i in order:
        if mass >= p:
            break
        keep[i] = True
        mass += np.exp(logp[i])
        closest = min(closest, abs(mass - p))
    return np.where(keep, logp, -np.inf), closest


def reference_log_probs(method, logits):
    rows = []
    for row in np.asarray(logits, np.float64):
        if isinstance(method, Greedy):
            out = np.full(V, -np.inf)
            out[int(np.argmax(row))] = 0.0
            rows.append(out)
            continue
        scaled = row / method.temperature
        if isinstance(method, TopK):
            scaled = reference_top_k(scaled, method.k)
        if isinstance(method, TopP):
            if method.k is not None:
                scaled = reference_top_k(scaled, method.k)
            scaled, closest = reference_top_p(scaled, method.p)
            assume(closest > 1e-5)  # float32 cumsum may round the other way at the boundary
        rows.append(log_softmax(scaled))
    return np.stack(rows)


methods = st.one_of(
    st.just(Greedy()),
    st.builds(Temperature, st.sampled_from([0.5, 1.0, 1.7])),
    st.builds(TopK, k=st.sampled_from([1, 3, 16, 40]), temperature=st.sampled_from([0.5, 1.0])),
    st.builds(
        TopP,
        p=st.sampled_from([0.1, 0.5, 0.9, 1.0]),
        temperature=st.sampled_from([0.7, 1.0]),
        k=st.sampled_from([None, 4]),
    ),
)


@given(methods, logits_strategy)
def test_log_probs_match_reference(method, logits):
    expected = reference_log_probs(method, logits)
    got = np.asarray(method.log_probs(jnp.asarray(logits)))
    np.testing.assert_array_equal(np.isfinite(got), np.isfinite(expected))
    np.testing.assert_allclose(got[np.isfinite(got)], expected[np.isfinite(expected)], atol=1e-5)


@given(methods, logits_strategy, st.integers(0, 2**31 - 1))
def test_samples_lie_in_the_support_with_their_log_prob(method, logits, seed):
    keys = jax.random.split(jax.random.key(seed), B)
    tokens, logprob = method.sample(jnp.asarray(logits), keys)
    support = np.asarray(method.log_probs(jnp.asarray(logits)))
    tokens, logprob = np.asarray(tokens), np.asarray(logprob)
    assert tokens.dtype == np.int32
    assert np.all(np.isfinite(support[np.arange(B), tokens]))
    np.testing.assert_allclose(logprob, support[np.arange(B), tokens], atol=1e-6)
    again, _ = method.sample(jnp.asarray(logits), keys)
    np.testing.assert_array_equal(np.asarray(again), tokens)


special = st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0])


@given(
    logits_strategy,
    st.lists(st.tuples(st.integers(0, B - 1), st.integers(0, V - 1), special), max_size=6),
)
def test_first_argmax_equals_argmax_including_ties_infinities_and_nans(logits, overrides):
    for row, column, value in overrides:
        logits[row, column] = value
    expected = [int(np.argmax(row)) for row in logits]  # NumPy: first max, first NaN wins
    got = np.asarray(first_argmax(jnp.asarray(logits)))
    assert got.dtype == np.int32
    assert got.tolist() == expected
    assert np.asarray(jnp.argmax(jnp.asarray(logits), axis=-1)).tolist() == expected


def test_first_argmax_of_an_all_masked_row_is_token_zero():
    assert first_argmax(jnp.full((2, V), -jnp.inf)).tolist() == [0, 0]


@given(methods, logits_strategy, st.integers(0, 2**31 - 1))
def test_draws_are_jax_random_categoricals_token_for_token(method, logits, seed):
    """The Gumbel-max draw reproduces ``jax.random.categorical`` on the same per-row keys, so
    seeded samples did not change when the draw was rewritten for speed."""
    keys = jax.random.split(jax.random.key(seed), B)
    logp = method.log_probs(jnp.asarray(logits))
    expected = jax.vmap(jax.random.categorical)(keys, logp)
    tokens, _ = method.sample(jnp.asarray(logits), keys)
    np.testing.assert_array_equal(np.asarray(tokens), np.asarray(expected))


@pytest.mark.parametrize("method", [Temperature(0.8), TopK(k=3), TopP(p=0.7)])
def test_empirical_frequencies_follow_the_distribution(method):
    logits = jnp.asarray([[2.0, 1.0, 0.5, 0.0, -1.0]])
    draws = 20000
    keys = jax.random.split(jax.random.key(0), draws)
    tokens = jax.vmap(lambda key: method.sample(logits, key[None])[0][0])(keys)
    frequencies = np.bincount(np.asarray(tokens), minlength=5) / draws
    expected = np.exp(np.asarray(method.log_probs(logits))[0])
    np.testing.assert_allclose(frequencies, expected, atol=0.015)  # ~4 standard errors


def test_method_from_arguments():
    assert method_from_arguments(0.0, top_k=5, top_p=0.5) == Greedy()
    assert method_from_arguments(1.0) == Temperature(1.0)
    assert method_from_arguments(0.7, top_k=5) == TopK(k=5, temperature=0.7)
    assert method_from_arguments(0.7, top_k=5, top_p=0.9) == TopP(p=0.9, temperature=0.7, k=5)
    assert method_from_arguments(1.0, top_p=1.0) == Temperature(1.0)
    for kwargs, key in [
        ({"temperature": -1.0}, "temperature"),
        ({"temperature": float("nan")}, "temperature"),  # NaN >= 0 is False, but say so
        ({"temperature": float("inf")}, "temperature"),  # logits / inf: every token alike
        ({"top_k": 0}, "top_k"),
        ({"top_p": 0.0}, "top_p"),
        ({"top_p": 1.5}, "top_p"),
    ]:
        with pytest.raises(ConfigError, match=key):
            method_from_arguments(**{"temperature": 1.0, **kwargs})
    for bad in (0.0, -0.5, float("nan"), float("inf")):
        with pytest.raises(ConfigError, match="temperature"):
            Temperature(bad)
