"""Group sampling (`generate` with a `group_size`, every scheme) against the static sampler on
each prompt repeated G times: the same rows, draws and stops, whatever the slot count, the
compaction ladder or the mesh; and its arguments checked."""

import itertools

import numpy as np
import pytest

from jaxopt_rl.model import init_model, make_mesh
from jaxopt_rl.model.testing import tiny_test_config
from jaxopt_rl.sampling import generate
from jaxopt_rl.sampling.compact import next_batch_size, smaller_batch_size
from jaxopt_rl.sampling.loop import MIN_SEGMENT_TOKENS

PROMPTS = [[5, 17, 99, 3, 41, 8, 77], [12, 60], [101, 7, 7, 30, 2, 90, 14, 66, 33, 21]]
G = 4
# Two cache segments, so compaction drops rows at a boundary; stop tokens common enough in this
# model that rows end at many different steps, in both segments and never.
BUDGET = 2 * MIN_SEGMENT_TOKENS + 5
STOPS = [2, 7]


@pytest.fixture(scope="module")
def model():
    return init_model(tiny_test_config("qwen3"), seed=4)


def repeated(prompts, group_size):
    return [prompt for prompt in prompts for _ in range(group_size)]


@pytest.fixture(scope="module")
def static_sampled(model):
    return generate(model, repeated(PROMPTS, G), BUDGET, 1.0, stop_tokens=STOPS, seed=3,
                    cache_segments=2)


def assert_same_rows(batch, expected):
    np.testing.assert_array_equal(batch.tokens, expected.tokens)
    np.testing.assert_array_equal(batch.lengths, expected.lengths)
    np.testing.assert_array_equal(batch.finished, expected.finished)
    np.testing.assert_allclose(batch.logprobs, expected.logprobs, atol=1e-5)
    np.testing.assert_allclose(batch.model_logprobs, expected.model_logprobs, atol=1e-5)


def test_the_workload_stops_rows_in_both_segments_and_at_the_budget(static_sampled):
    lengths = static_sampled.lengths
    first_segment = BUDGET - BUDGET // 2  # segment_limits() of 2 segments: (67, 133)
    assert (lengths <= first_segment).any()
    assert ((lengths > first_segment) & (lengths < BUDGET)).any()
    assert (lengths == BUDGET).any() and not static_sampled.finished[lengths == BUDGET].all()


@pytest.mark.parametrize(
    "scheme, slots",
    [("static", None), ("compact", None), ("slots", 1), ("slots", 5), ("slots", 12), ("slots", 40)],
)
def test_group_sampling_draws_the_static_samplers_rows(model, static_sampled, scheme, slots):
    batch = generate(model, PROMPTS, BUDGET, 1.0, stop_tokens=STOPS, seed=3, group_size=G,
                     scheme=scheme, slots=slots, cache_segments=2)
    assert batch.tokens.shape == (len(PROMPTS) * G, BUDGET)
    assert_same_rows(batch, static_sampled)
    for row, length in enumerate(batch.lengths):
        assert np.all(batch.tokens[row, length:] == 0) and np.all(batch.logprobs[row, length:] == 0)


@pytest.mark.parametrize("scheme", ["compact", "slots"])
def test_greedy_group_sampling_equals_greedy_static_sampling(model, scheme):
    budget = 20
    expected = generate(model, repeated(PROMPTS, 2), budget, 0.0)
    batch = generate(model, PROMPTS, budget, 0.0, group_size=2, scheme=scheme, slots=3)
    assert_same_rows(batch, expected)
    assert np.all(batch.logprobs == 0.0)


@pytest.mark.parametrize("scheme", ["compact", "slots"])
def test_stop_sequences_end_group_rows_as_they_end_static_rows(model, scheme):
    free = generate(model, repeated(PROMPTS, G), 24, 1.0, seed=8)
    sequences = [tuple(int(t) for t in free.tokens[0, 3:5]), tuple(int(t) for t in free.tokens[5, 9:12])]
    expected = generate(model, repeated(PROMPTS, G), 24, 1.0, seed=8, stop_sequences=sequences)
    assert expected.lengths[0] <= 5 and expected.lengths[5] <= 12
    batch = generate(model, PROMPTS, 24, 1.0, seed=8, stop_sequences=sequences, group_size=G,
                     scheme=scheme, slots=3)
    assert_same_rows(batch, expected)


@pytest.mark.parametrize("scheme", ["compact", "slots"])
def test_group_sampling_is_seeded(model, static_sampled, scheme):
    kwargs = dict(stop_tokens=STOPS, group_size=G, scheme=scheme, slots=5, cache_segments=2)
    again = generate(model, PROMPTS, BUDGET, 1.0, seed=3, **kwargs)
    np.testing.assert_array_equal(again.tokens, static_sampled.tokens)
    other = generate(model, PROMPTS, BUDGET, 1.0, seed=4, **kwargs)
    assert not np.array_equal(other.tokens, static_sampled.tokens)


@pytest.mark.parametrize("scheme", ["compact", "slots"])
def test_sharded_group_sampling_equals_unsharded(model, static_sampled, scheme):
    """8 fake devices: 4 batch shards (data x fsdp) x 2 tensor; 12 requests, 3 per shard."""
    mesh = make_mesh(data=2, fsdp=2, tensor=2)
    batch = generate(model, PROMPTS, BUDGET, 1.0, stop_tokens=STOPS, seed=3, group_size=G,
                     scheme=scheme, slots=6, cache_segments=2, mesh=mesh)
    assert_same_rows(batch, static_sampled)


def test_requests_that_do_not_fill_the_shards_are_padded_not_run(model):
    mesh = make_mesh(data=2, fsdp=2, tensor=2)
    prompts = PROMPTS[:1]
    expected = generate(model, repeated(prompts, 3), 16, 1.0, seed=2)
    for scheme in ("compact", "slots"):
        batch = generate(model, prompts, 16, 1.0, seed=2, group_size=3, scheme=scheme, slots=2,
                         mesh=mesh)
        assert batch.tokens.shape == (3, 16)
        assert_same_rows(batch, expected)


def test_the_compaction_ladder_halves_while_the_survivors_fit():
    assert next_batch_size(128, 118, 1) == 128
    assert next_batch_size(128, 64, 1) == 64
    assert next_batch_size(128, 63, 1) == 64
    assert next_batch_size(128, 32, 1) == 32
    assert next_batch_size(128, 1, 1) == 1
    assert next_batch_size(12, 5, 4) == 8  # 12 -> 8 (6 rounded up to the 4 shards) -> 4 < 5
    assert next_batch_size(12, 1, 4) == 4
    assert next_batch_size(4, 1, 4) == 4
    # a floor: no size below min_rows but the first
    assert next_batch_size(128, 1, 1, min_rows=8) == 8
    assert next_batch_size(128, 5, 1, min_rows=6) == 8  # 8 -> 4 < 6
    assert next_batch_size(6, 1, 1, min_rows=8) == 6
    assert next_batch_size(24, 3, 4, min_rows=8) == 8  # 24 -> 12 -> 8 (6 rounded up); 4 < 8


def test_a_segment_call_returns_when_the_next_ladder_size_holds_the_running_rows():
    assert smaller_batch_size(128, 1) == 64
    assert smaller_batch_size(9, 1) == 4
    assert smaller_batch_size(1, 1) == 0  # no smaller size: run until every row has stopped
    assert smaller_batch_size(12, 4) == 8  # 6 rounded up to the 4 shards
    assert smaller_batch_size(4, 4) == 0
    assert smaller_batch_size(16, 1, min_rows=8) == 8
    assert smaller_batch_size(12, 1, min_rows=8) == 0


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(group_size=0), "group_size must be a positive integer"),
        (dict(group_size=2.0), "group_size must be a positive integer"),
        (dict(scheme="paged"), "scheme must be one of"),
        (dict(scheme="slots", slots=None), "slots must be a positive integer"),
        (dict(scheme="slots", slots=0), "slots must be a positive integer"),
        (dict(max_new_tokens=0), "max_new_tokens must be a positive integer"),
    ],
)
def test_bad_arguments_are_refused_by_name(model, kwargs, message):
    arguments = dict(group_size=2, max_new_tokens=8)
    arguments.update(kwargs)
    with pytest.raises(ValueError, match=message):
        generate(model, PROMPTS, **arguments)


@pytest.mark.parametrize("min_rows", [1, 8])
def test_compaction_shrinks_the_batch_as_soon_as_half_of_it_has_stopped(model, monkeypatch,
                                                                        min_rows):
    """A segment call returns once the rows still running fit the next ladder size (half the
    batch, never below `min_rows`), and the next call takes only the survivors: in this workload
    half the rows stop inside the first segment, so a smaller batch decodes part of that segment,
    and the result is unchanged."""
    from jaxopt_rl.sampling import host

    calls = []
    real = host.compiled_segment

    def recording(graphdef, settings, mesh, rules, prompt_len, limit):
        segment = real(graphdef, settings, mesh, rules, prompt_len, limit)

        def call(params, state, rows_B, live, exit_at):
            calls.append((limit, len(rows_B), int(live), int(exit_at)))
            return segment(params, state, rows_B, live, exit_at)

        return call

    monkeypatch.setattr(host, "compiled_segment", recording)
    monkeypatch.setattr(host, "MIN_BATCH_ROWS", min_rows)
    prompts = PROMPTS * 2  # 24 rows
    expected = generate(model, repeated(prompts, G), BUDGET, 1.0, stop_tokens=STOPS, seed=3,
                        cache_segments=2)
    batch = generate(model, prompts, BUDGET, 1.0, stop_tokens=STOPS, seed=3, group_size=G,
                     scheme="compact", cache_segments=2)
    assert_same_rows(batch, expected)
    first_limit = calls[0][0]
    # the workload: half the rows stop inside segment 1, a quarter run to the budget
    assert int((expected.lengths <= first_limit).sum()) == 12
    assert int((expected.lengths == BUDGET).sum()) == 6
    assert calls[0] == (first_limit, 24, 24, 12)
    within_first = [call for call in calls if call[0] == first_limit]
    assert len(within_first) >= 2 and within_first[1][1] == 12  # shrunk before the boundary
    # the last call: 12 rows run through segment 2 where the ladder stops at 8; otherwise it
    # returns once half of them have stopped and the six rows cut at the budget end alone
    assert calls[-1][1:3] == ((12, 12) if min_rows == 8 else (6, 6))
    for (_, size, live, exit_at), (_, next_size, next_live, _) in itertools.pairwise(calls):
        assert next_live <= live and next_live <= next_size <= size
        # one shard: the ladder halves (rounding down), never below min_rows
        assert exit_at == (size // 2 if size // 2 >= min_rows else 0)


def test_filler_rows_never_run_nor_hold_a_call_open(model, monkeypatch):
    """Repeats that pad a compacted batch to its ladder size are marked stopped inside the call:
    at every return the rows past `live` are stopped and wrote no token, and a call that ends
    before its segment's last token has no more than `exit_at` rows running (a filler that
    counted as running would hold it open). 7 prompts x 3 = 21 rows, so survivors rarely fill
    a ladder size exactly."""
    from jaxopt_rl.sampling import host

    prompts = [[5 + i, 17, 99 - i] for i in range(7)]
    seen = {"fillers": 0, "early": 0}
    real = host.compiled_segment

    def checking(graphdef, settings, mesh, rules, prompt_len, limit):
        segment = real(graphdef, settings, mesh, rules, prompt_len, limit)

        def call(params, state, rows_B, live, exit_at):
            before = np.asarray(state.lengths_B)[np.asarray(rows_B)]
            out = segment(params, state, rows_B, live, exit_at)
            finished, lengths = np.asarray(out.finished_B), np.asarray(out.lengths_B)
            live = int(live)
            assert finished[live:].all()
            np.testing.assert_array_equal(lengths[live:], before[live:])
            seen["fillers"] += len(rows_B) - live
            if int(out.step) < limit:
                seen["early"] += 1
                assert int((~finished).sum()) <= int(exit_at)
            return out

        return call

    monkeypatch.setattr(host, "compiled_segment", checking)
    monkeypatch.setattr(host, "MIN_BATCH_ROWS", 1)
    expected = generate(model, repeated(prompts, 3), BUDGET, 1.0, stop_tokens=STOPS, seed=5,
                        cache_segments=2)
    batch = generate(model, prompts, BUDGET, 1.0, stop_tokens=STOPS, seed=5, group_size=3,
                     scheme="compact", cache_segments=2)
    assert_same_rows(batch, expected)
    assert seen["fillers"] > 0 and seen["early"] > 0  # the workload exercises both
