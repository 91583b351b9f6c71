"""Host-side batching: left padding and input errors."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from jaxopt_rl.model import init_model
from jaxopt_rl.model.testing import tiny_test_config
from jaxopt_rl.sampling import generate, left_pad


@given(
    st.lists(st.lists(st.integers(1, 99), min_size=1, max_size=9), min_size=1, max_size=5),
    st.integers(1, 8),
    st.integers(1, 4),
)
def test_left_pad_right_aligns_every_prompt(prompts, prompt_multiple, batch_multiple):
    padded, start = left_pad(prompts, 0, 100, prompt_multiple, batch_multiple)
    rows, width = padded.shape
    assert width % prompt_multiple == 0 and width >= max(map(len, prompts))
    assert rows % batch_multiple == 0 and rows >= len(prompts)
    for row, prompt in enumerate(prompts):
        assert padded[row, start[row] :].tolist() == prompt
        assert np.all(padded[row, : start[row]] == 0)
    assert np.all(start[len(prompts) :] == width - 1)  # dummy rows: one pad token


@pytest.mark.parametrize(
    "prompts, message",
    [
        ([], "prompts is empty"),
        ([[1, 2], []], r"prompts\[1\] is empty"),
        ([[1, 200]], r"prompts\[0\]\[1\] = 200 is outside the vocabulary"),
        ([[1, -1]], r"prompts\[0\]\[1\] = -1"),
        ([[1.5, 2.0]], "must be integers"),
    ],
)
def test_left_pad_rejects_bad_prompts(prompts, message):
    with pytest.raises(ValueError, match=message):
        left_pad(prompts, 0, 100)


def test_generate_rejects_bad_arguments():
    model = init_model(tiny_test_config("qwen2"), seed=0)
    for kwargs, message in [
        ({"max_new_tokens": 0}, "max_new_tokens"),
        ({"max_new_tokens": 4, "temperature": -0.5}, "temperature"),
        ({"max_new_tokens": 4, "stop_tokens": [128]}, r"stop_tokens\[0\] = 128"),
        ({"max_new_tokens": 4, "stop_sequences": [[]]}, r"stop_sequences\[0\] is empty"),
        ({"max_new_tokens": 4, "pad_id": 999}, "pad_id"),
        ({"max_new_tokens": 4, "cache_segments": 0}, "cache_segments"),
        ({"max_new_tokens": 4, "cache_segments": 2.0}, "cache_segments"),
    ]:
        with pytest.raises(ValueError, match=message):
            generate(model, [[1, 2]], **kwargs)
