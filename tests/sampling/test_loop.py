"""The compiled sampler against a slow reference (a full forward pass per token), and its
contracts: stops and padding, reproducibility, batch/padding invariance, cache segmentation
changes nothing, sharded = unsharded."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.model import init_model, make_mesh
from jaxopt_rl.model.testing import tiny_test_config
from jaxopt_rl.sampling import Greedy, TopP, generate
from jaxopt_rl.sampling.loop import MIN_SEGMENT_TOKENS, LoopSettings

N = 12
PROMPTS = [[5, 17, 99, 3, 41, 8, 77], [12, 60], [101, 7, 7, 30, 2, 90, 14, 66, 33, 21]]


@pytest.fixture(scope="module")
def model():
    return init_model(tiny_test_config("qwen3"), seed=4)


@pytest.fixture(scope="module")
def forward(model):
    """Logits of one sequence by a full causal forward pass (right-padded to one compiled shape:
    later pads cannot change earlier positions)."""
    graphdef, state = nnx.split(model)
    fn = jax.jit(lambda state, ids: nnx.merge(graphdef, state)(ids))

    def run(ids):
        padded = np.zeros((1, 32), np.int32)
        padded[0, : len(ids)] = ids
        return np.asarray(fn(state, jnp.asarray(padded))[0, : len(ids)], np.float64)

    return run


def reference_greedy(forward, prompt, steps):
    sequence = list(prompt)
    for _ in range(steps):
        sequence.append(int(np.argmax(forward(sequence)[-1])))
    return sequence[len(prompt) :]


def log_softmax(x):
    x = x - x.max(-1, keepdims=True)
    return x - np.log(np.exp(x).sum(-1, keepdims=True))


@pytest.fixture(scope="module")
def greedy(model):
    return generate(model, PROMPTS, N, temperature=0.0)


def test_greedy_equals_a_full_forward_pass_per_token(greedy, forward):
    for row, prompt in enumerate(PROMPTS):
        expected = reference_greedy(forward, prompt, N)
        assert greedy.tokens[row].tolist() == expected, f"row {row}"
        logits = forward(prompt + expected)[len(prompt) - 1 : -1]
        expected_logp = log_softmax(logits)[np.arange(N), expected]
        np.testing.assert_allclose(greedy.model_logprobs[row], expected_logp, atol=1e-5)
    assert greedy.tokens.shape == (3, N) and greedy.tokens.dtype == np.int32
    assert greedy.lengths.tolist() == [N] * 3 and not greedy.finished.any()
    assert np.all(greedy.logprobs == 0.0)
    assert greedy.completions() == greedy.tokens.tolist()


def test_stop_tokens_and_stop_sequences_end_rows_and_pad_after(model, greedy):
    free = greedy.tokens.tolist()
    stop_token = free[0][3]  # row 0 stops on a token at (or before) step 3
    sequence = tuple(free[1][4:7])  # row 1 stops on a 3-token sequence ending at (or before) step 6

    def expected_length(row):
        for i, token in enumerate(row):
            if token == stop_token or tuple(row[max(0, i - 2) : i + 1]) == sequence:
                return i + 1
        return N

    batch = generate(
        model,
        PROMPTS,
        N,
        temperature=0.0,
        stop_tokens=[stop_token],
        stop_sequences=[sequence],
        pad_id=0,
    )
    for row in range(3):
        length = expected_length(free[row])
        assert batch.lengths[row] == length
        assert batch.finished[row] == (length < N or free[row][N - 1] == stop_token)
        assert batch.tokens[row, :length].tolist() == free[row][:length]
        assert np.all(batch.tokens[row, length:] == 0)
        assert np.all(batch.model_logprobs[row, length:] == 0.0)
        np.testing.assert_allclose(
            batch.model_logprobs[row, :length], greedy.model_logprobs[row, :length], atol=1e-6
        )
    assert batch.lengths[0] <= 4 and batch.lengths[1] <= 7


@pytest.fixture(scope="module")
def sampled(model):
    return generate(model, PROMPTS, N, temperature=1.0, seed=42)


def test_temperature_one_sampling_is_seeded_and_row_independent(model, sampled):
    again = generate(model, PROMPTS, N, temperature=1.0, seed=42)
    np.testing.assert_array_equal(again.tokens, sampled.tokens)
    other = generate(model, PROMPTS, N, temperature=1.0, seed=43)
    assert not np.array_equal(other.tokens, sampled.tokens)
    # the same row id alone (less left padding, batch of 1) draws the same sample
    alone = generate(model, PROMPTS[:1], N, temperature=1.0, seed=42)
    np.testing.assert_array_equal(alone.tokens[0], sampled.tokens[0])
    np.testing.assert_allclose(alone.model_logprobs[0], sampled.model_logprobs[0], atol=1e-5)
    # at temperature 1 without truncation the two log-prob kinds coincide
    np.testing.assert_allclose(sampled.logprobs, sampled.model_logprobs, atol=1e-6)
    assert np.all(sampled.model_logprobs < 0)


@pytest.fixture(scope="module")
def nucleus(model):
    return generate(model, PROMPTS, N, temperature=0.8, top_k=20, top_p=0.6, seed=5)


def test_truncated_sampling_log_probs_match_the_method_on_full_forward_logits(nucleus, forward):
    method = TopP(p=0.6, temperature=0.8, k=20)
    for row, prompt in enumerate(PROMPTS):
        tokens = nucleus.tokens[row].tolist()
        logits = forward(prompt + tokens)[len(prompt) - 1 : -1]
        support = np.asarray(method.log_probs(jnp.asarray(logits, jnp.float32)))
        assert np.all(np.isfinite(support[np.arange(N), tokens]))
        np.testing.assert_allclose(nucleus.logprobs[row], support[np.arange(N), tokens], atol=1e-4)
        np.testing.assert_allclose(
            nucleus.model_logprobs[row], log_softmax(logits)[np.arange(N), tokens], atol=1e-4
        )
    assert np.all(nucleus.logprobs >= nucleus.model_logprobs - 1e-5)  # truncation only raises them


def test_sharded_sampling_equals_unsharded(model, nucleus):
    mesh = make_mesh(data=2, fsdp=2, tensor=2)
    sharded = generate(model, PROMPTS, N, temperature=0.8, top_k=20, top_p=0.6, seed=5, mesh=mesh)
    np.testing.assert_array_equal(sharded.tokens, nucleus.tokens)
    np.testing.assert_array_equal(sharded.lengths, nucleus.lengths)
    np.testing.assert_allclose(sharded.logprobs, nucleus.logprobs, atol=1e-4)
    np.testing.assert_allclose(sharded.model_logprobs, nucleus.model_logprobs, atol=1e-4)


@given(st.integers(1, 5000), st.integers(1, 16))
def test_segment_limits_cut_the_budget_into_equal_runs(budget, segments):
    limits = LoopSettings(Greedy(), budget, cache_segments=segments).segment_limits()
    assert limits[-1] == budget and list(limits) == sorted(set(limits))
    assert 1 <= len(limits) <= max(1, min(segments, budget // MIN_SEGMENT_TOKENS))
    runs = np.diff([0, *limits])
    assert np.all(runs[:-1] == runs[0]) and runs[-1] <= runs[0]
    if len(limits) > 1:
        assert runs[0] >= MIN_SEGMENT_TOKENS


def test_cache_segments_change_nothing_but_rounding(model):
    """Rows stop in the first run, in the second, or never; each run's cache is grown from the
    last; the draws (temperature 1, the RL setting) are keyed by step, not by run."""
    budget = 2 * MIN_SEGMENT_TOKENS + 3  # two runs of 66 and 65 tokens
    prompts = [*PROMPTS, [9, 9, 9]]
    free = generate(model, prompts, budget, temperature=1.0, seed=11, cache_segments=1).tokens

    def first_stop(row, sequences):
        for i in range(budget):
            if any(tuple(free[row, i + 1 - len(q) : i + 1]) == q for q in sequences):
                return i + 1
        return budget

    # a 2-token stop sequence that ends row 0 early in run 1, one that ends row 1 in run 2
    stops = [tuple(int(t) for t in free[0, 2:4])]
    candidates = [tuple(int(t) for t in free[1, i - 1 : i + 1]) for i in range(70, budget - 1)]
    stops += [q for q in candidates if first_stop(1, [*stops, q]) > 70][:1]
    lengths = [first_stop(row, stops) for row in range(len(prompts))]
    assert lengths[0] <= 66 < lengths[1] < budget == max(lengths), (stops, lengths)
    kwargs = dict(temperature=1.0, stop_sequences=stops, seed=11)
    one = generate(model, prompts, budget, cache_segments=1, **kwargs)
    two = generate(model, prompts, budget, cache_segments=2, **kwargs)
    assert LoopSettings(Greedy(), budget, cache_segments=2).segment_limits() == (66, budget)
    assert one.lengths.tolist() == lengths
    np.testing.assert_array_equal(two.tokens, one.tokens)
    np.testing.assert_array_equal(two.lengths, one.lengths)
    np.testing.assert_array_equal(two.finished, one.finished)
    np.testing.assert_allclose(two.logprobs, one.logprobs, atol=1e-5)
    np.testing.assert_allclose(two.model_logprobs, one.model_logprobs, atol=1e-5)
