"""The clipped GRPO loss, its diagnostics, the IS weight and the SFT loss against NumPy loops;
the ratio-1 gradient identity; RiVER advantages pass through uncentred."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from jaxopt_rl.training import grpo

B, L = 3, 6
logps = hnp.arrays(np.float32, (B, L), elements=st.floats(-6, 0, width=32, allow_subnormal=False))
shifts = hnp.arrays(np.float32, (B, L), elements=st.floats(-0.5, 0.5, width=32, allow_subnormal=False))
advs = hnp.arrays(np.float32, (B,), elements=st.floats(-2, 2, width=32, allow_subnormal=False))
masks = hnp.arrays(np.float32, (B, L), elements=st.sampled_from([0.0, 1.0, 1.0]))
eps = st.tuples(st.floats(0.05, 0.4), st.floats(0.05, 0.4))


def loss_loop(logp, old, adv, mask, eps_low, eps_high, horizon, ref=None, kl_coef=0.0):
    total = 0.0
    for b in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            if not mask[b, t]:
                continue
            r = math.exp(float(logp[b, t]) - float(old[b, t]))
            clipped = min(max(r, 1 - eps_low), 1 + eps_high)
            total -= min(r * float(adv[b]), clipped * float(adv[b]))
            if ref is not None:
                d = float(ref[b, t]) - float(logp[b, t])
                total += kl_coef * (math.exp(d) - d - 1)
    return total / horizon


@given(logps, shifts, advs, masks, eps)
def test_loss_matches_loop(logp, shift, adv, mask, eps_pair):
    old = logp + shift
    eps_low, eps_high = eps_pair
    got = grpo.grpo_loss(logp, old, adv, mask, eps_low=eps_low, eps_high=eps_high, horizon=40.0)
    want = loss_loop(logp, old, adv, mask, eps_low, eps_high, 40.0)
    np.testing.assert_allclose(float(got), want, rtol=2e-5, atol=1e-6)


@given(logps, shifts, shifts, advs, masks, st.floats(0.0, 0.5))
def test_loss_with_kl_matches_loop(logp, shift, ref_shift, adv, mask, kl_coef):
    old, ref = logp + shift, logp + ref_shift
    got = grpo.grpo_loss(
        logp, old, adv, mask, eps_low=0.2, eps_high=0.28, horizon=20.0, ref_logp=ref,
        kl_coef=kl_coef,
    )
    want = loss_loop(logp, old, adv, mask, 0.2, 0.28, 20.0, ref, kl_coef)
    np.testing.assert_allclose(float(got), want, rtol=2e-5, atol=1e-6)


def test_per_token_advantages_equal_per_row_broadcast():
    rng = np.random.default_rng(0)
    logp = rng.normal(size=(B, L)).astype(np.float32)
    old = logp + 0.1 * rng.normal(size=(B, L)).astype(np.float32)
    adv = rng.normal(size=(B,)).astype(np.float32)
    mask = np.ones((B, L), np.float32)
    kw = dict(eps_low=0.2, eps_high=0.2, horizon=18.0)
    row = grpo.grpo_loss(logp, old, adv, mask, **kw)
    token = grpo.grpo_loss(logp, old, np.repeat(adv[:, None], L, 1), mask, **kw)
    np.testing.assert_allclose(float(row), float(token), rtol=1e-6)


def test_masked_garbage_cannot_poison_the_loss():
    """Padding may hold anything (a huge log-ratio): the loss and its gradient stay finite."""
    logp = np.zeros((1, 4), np.float32)
    old = np.array([[0.0, -0.1, 500.0, -500.0]], np.float32)
    mask = np.array([[1.0, 1.0, 0.0, 0.0]], np.float32)

    def loss(x):
        return grpo.grpo_loss(
            x, old, np.array([1.0]), mask, eps_low=0.2, eps_high=0.2, horizon=4.0,
            ref_logp=old, kl_coef=0.1,
        )

    value, grad = jax.value_and_grad(loss)(jnp.asarray(logp))
    assert np.isfinite(float(value)) and np.all(np.isfinite(np.asarray(grad)))
    assert np.all(np.asarray(grad)[0, 2:] == 0)


def test_kl_without_reference_is_an_error():
    x = np.zeros((1, 2), np.float32)
    try:
        grpo.grpo_loss(x, x, np.ones(1), x, eps_low=0.2, eps_high=0.2, horizon=2.0, kl_coef=0.1)
    except ValueError as err:
        assert "ref_logp" in str(err)
    else:
        raise AssertionError("kl_coef without ref_logp was accepted")


@given(logps, advs, masks, st.integers(1, 1000))
def test_ratio_one_gradient_is_plain_policy_gradient_over_horizon(logp, adv, mask, horizon):
    """At r = 1 (old = current, stop-gradient) the clip is inactive and the gradient is
    -(1/N) sum mask * A * grad logp: here, w.r.t. logp itself, -mask * A / N."""

    def loss(x):
        return grpo.grpo_loss(
            x, jax.lax.stop_gradient(x), adv, mask, eps_low=0.2, eps_high=0.28,
            horizon=float(horizon),
        )

    grad = np.asarray(jax.grad(loss)(jnp.asarray(logp)))
    want = -mask * adv[:, None] / horizon
    np.testing.assert_allclose(grad, want, rtol=1e-5, atol=1e-9)


def test_ratio_one_gradient_through_a_model_is_reinforce_over_horizon():
    """The same identity through parameters: a softmax policy over 5 actions."""
    rng = np.random.default_rng(1)
    theta = jnp.asarray(rng.normal(size=(5,)), jnp.float32)
    actions = np.array([[0, 3, 3, 1], [2, 4, 0, 0]])
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1]], np.float32)
    adv = np.array([0.7, -1.3], np.float32)

    def logp_of(t):
        return jax.nn.log_softmax(t)[actions]

    def loss(t):
        lp = logp_of(t)
        return grpo.grpo_loss(
            lp, jax.lax.stop_gradient(lp), adv, mask, eps_low=0.2, eps_high=0.2, horizon=16.0
        )

    def reinforce(t):
        return -jnp.sum(mask * adv[:, None] * logp_of(t)) / 16.0

    np.testing.assert_allclose(jax.grad(loss)(theta), jax.grad(reinforce)(theta), rtol=1e-5)


def diagnostics_loop(logp, old, adv, mask, eps_low, eps_high, sampler):
    rows = []
    for b in range(logp.shape[0]):
        for t in range(logp.shape[1]):
            if mask[b, t]:
                r = math.exp(float(logp[b, t]) - float(old[b, t]))
                d = float(logp[b, t]) - float(sampler[b, t])
                rows.append((r, adv[b], d))
    n = max(len(rows), 1)
    return {
        "clip_low": sum(a < 0 and r < 1 - eps_low for r, a, _ in rows) / n,
        "clip_high": sum(a > 0 and r > 1 + eps_high for r, a, _ in rows) / n,
        "ratio_mean": sum(r for r, _, _ in rows) / n,
        "ratio_max": max(r for r, _, _ in rows) if rows else -math.inf,
        "logp_mismatch": sum(abs(d) for _, _, d in rows) / n,
        "mismatch_k3": sum(math.exp(d) - d - 1 for _, _, d in rows) / n,
    }


@given(logps, shifts, shifts, advs, masks)
def test_diagnostics_match_loop(logp, shift, sampler_shift, adv, mask):
    old, sampler = logp + shift, logp + 0.1 * sampler_shift
    sums = grpo.diagnostic_sums(
        grpo.PolicyTokens(logp, old, adv, mask), eps_low=0.2, eps_high=0.28, sampler_logp=sampler
    )
    got = grpo.finish_diagnostics(sums)
    want = diagnostics_loop(logp, old, adv, mask, 0.2, 0.28, sampler)
    for key, value in want.items():
        np.testing.assert_allclose(float(got[key]), value, rtol=1e-4, atol=1e-6, err_msg=key)


def test_diagnostics_combine_like_one_batch():
    rng = np.random.default_rng(2)
    logp = rng.normal(size=(4, L)).astype(np.float32)
    old = logp + 0.3 * rng.normal(size=(4, L)).astype(np.float32)
    adv = rng.normal(size=(4,)).astype(np.float32)
    mask = (rng.random((4, L)) < 0.7).astype(np.float32)
    kw = dict(eps_low=0.2, eps_high=0.2)
    whole = grpo.diagnostic_sums(grpo.PolicyTokens(logp, old, adv, mask), sampler_logp=old, **kw)
    parts = grpo.combine_diagnostics(*(
        grpo.diagnostic_sums(grpo.PolicyTokens(logp[rows], old[rows], adv[rows], mask[rows]),
                             sampler_logp=old[rows], **kw)
        for rows in (slice(0, 2), slice(2, 4))
    ))
    for key in whole:
        np.testing.assert_allclose(float(parts[key]), float(whole[key]), rtol=1e-5, err_msg=key)


def test_truncated_is_weight_is_capped_and_gradient_free():
    trainer = jnp.array([[0.0, -1.0, -3.0]])
    sampler = jnp.array([[-2.0, -1.0, 0.0]])
    w = grpo.truncated_is_weight(trainer, sampler, jnp.ones((1, 3)), cap=2.0)
    np.testing.assert_allclose(np.asarray(w), [[2.0, 1.0, math.exp(-3.0)]], rtol=1e-6)
    grad = jax.grad(lambda x: jnp.sum(grpo.truncated_is_weight(x, sampler, 1.0, 5.0)))(trainer)
    assert np.all(np.asarray(grad) == 0)


def test_target_logprobs_and_entropy_match_loop():
    rng = np.random.default_rng(3)
    logits = rng.normal(size=(2, 5, 7)).astype(np.float32)
    tokens = rng.integers(0, 7, size=(2, 5))
    logp, entropy = map(np.asarray, grpo.target_logprobs(jnp.asarray(logits), tokens))
    for b in range(2):
        assert logp[b, 0] == 0 and entropy[b, 0] == 0
        for t in range(1, 5):
            z = logits[b, t - 1].astype(np.float64)
            p = np.exp(z - z.max()) / np.exp(z - z.max()).sum()
            np.testing.assert_allclose(logp[b, t], np.log(p[tokens[b, t]]), rtol=1e-5)
            np.testing.assert_allclose(entropy[b, t], -(p * np.log(p)).sum(), rtol=1e-5)


@given(logps, masks)
def test_sft_loss_is_mean_completion_cross_entropy(logp, mask):
    got = float(grpo.sft_loss(logp, mask))
    picked = [float(logp[b, t]) for b in range(B) for t in range(L) if mask[b, t]]
    want = -sum(picked) / max(len(picked), 1)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    fixed = float(grpo.sft_loss(logp, mask, horizon=100.0))
    np.testing.assert_allclose(fixed, -sum(picked) / 100.0, rtol=1e-5, atol=1e-7)


def test_sft_loss_ignores_prompt_tokens():
    logp = np.array([[-50.0, -50.0, -1.0, -2.0]], np.float32)  # prompt badly predicted
    mask = np.array([[0, 0, 1, 1]], np.float32)
    np.testing.assert_allclose(float(grpo.sft_loss(logp, mask)), 1.5, rtol=1e-6)


def test_river_advantages_pass_through_uncentred():
    rewards = np.array([[0.5, 0.25, 0.75, 0.0]], np.float32)  # mean is not zero
    lengths = np.array([[3, 10, 1, 7]])
    out = np.asarray(grpo.advantages(rewards, lengths, river=True))
    np.testing.assert_array_equal(out, rewards)
    centred = np.asarray(grpo.advantages(rewards, lengths, river=False))
    assert not np.allclose(centred, rewards)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), tokens=st.integers(2, 23), chunk=st.integers(1, 9))
def test_chunked_target_logprobs_equal_the_whole_row_in_value_and_gradient(seed, tokens, chunk):
    """Chunks of any size, dividing the row or not, against `target_logprobs` of the full
    logits (itself checked against the loop above); gradients through the projection too."""
    rng = np.random.default_rng(seed)
    hidden = jnp.asarray(rng.normal(size=(2, tokens, 6)), jnp.float32)
    weight = jnp.asarray(rng.normal(size=(6, 11)), jnp.float32)
    ids = jnp.asarray(rng.integers(0, 11, size=(2, tokens)), jnp.int32)
    cotangent = jnp.asarray(rng.normal(size=(2, 2, tokens)), jnp.float32)

    def whole(hidden, weight):
        return grpo.target_logprobs(hidden @ weight, ids)

    def chunked(hidden, weight):
        return grpo.chunked_target_logprobs(hidden, ids, lambda h: h @ weight, chunk)

    for a, b in zip(chunked(hidden, weight), whole(hidden, weight), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-5)

    def pulled(fn):
        return jax.grad(lambda h, w: jnp.sum(jnp.stack(fn(h, w)) * cotangent),
                        argnums=(0, 1))(hidden, weight)

    for a, b in zip(pulled(chunked), pulled(whole), strict=True):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), atol=1e-4, rtol=1e-4)
