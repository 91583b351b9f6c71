"""Grain prompt loader: deterministic order, disjoint shards, exact resume from saved state."""

from __future__ import annotations

import itertools
import json

import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.data.loader import PromptLoaderConfig, prompt_dataset, prompt_iterator
from jaxopt_rl.data.schema import Problem
from jaxopt_rl.data.store import load_dataset
from jaxopt_rl.data.writer import write_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """Eleven train problems and two test ones (only problems.jsonl matters to the loader)."""
    root = tmp_path_factory.mktemp("prompts")
    problems = [Problem(problem_id=f"p{i:02d}", statement=f"Statement number {i}.", title=f"P{i}",
                        meta={"split": "test" if i >= 11 else "train"}) for i in range(13)]
    write_dataset(root, problems, funnel=[], rejections=[], manifest={"name": "prompts"})
    return load_dataset(root)


def take(iterator, n):
    return [e["problem_id"] for e in itertools.islice(iterator, n)]


def test_elements_carry_the_prompt(dataset):
    element = next(iter(prompt_dataset(dataset, PromptLoaderConfig(), 0, 1)))
    assert element["prompt"].startswith(element["statement"])
    assert "```python" in element["prompt"]
    assert set(element) >= {"problem_id", "difficulty", "time_limit_s", "epoch", "index"}


def test_each_epoch_is_a_permutation_and_epochs_differ(dataset):
    ids = take(iter(prompt_dataset(dataset, PromptLoaderConfig(seed=3), 0, 1)), 33)
    epochs = [ids[i:i + 11] for i in range(0, 33, 11)]
    assert all(sorted(e) == dataset.problem_ids("train") for e in epochs)
    assert epochs[0] != epochs[1]
    again = take(iter(prompt_dataset(dataset, PromptLoaderConfig(seed=3), 0, 1)), 33)
    assert again == ids
    other = take(iter(prompt_dataset(dataset, PromptLoaderConfig(seed=4), 0, 1)), 11)
    assert other != epochs[0]


@pytest.mark.parametrize("drop_remainder", [True, False])
def test_process_shards_are_disjoint_within_an_epoch(dataset, drop_remainder):
    config = PromptLoaderConfig(seed=1, drop_remainder=drop_remainder)
    count = 3
    per_shard = 11 // count if drop_remainder else -(-11 // count)
    for epoch in range(3):
        seen = []
        for process in range(count):
            ids = take(iter(prompt_dataset(dataset, config, process, count)),
                       per_shard * (epoch + 1))
            seen.extend(ids[per_shard * epoch:])
        if drop_remainder:
            assert len(set(seen)) == len(seen) == 9
        else:
            assert set(seen) == set(dataset.problem_ids("train")) and len(seen) == 12


def test_resume_mid_epoch_from_saved_state(dataset):
    config = PromptLoaderConfig(seed=7)
    iterator = prompt_iterator(dataset, config, process_index=1, process_count=2)
    take(iterator, 7)  # into the second epoch (5 per shard)
    state = json.loads(json.dumps(iterator.get_state()))  # survives a JSON checkpoint
    expected = take(iterator, 12)
    resumed = prompt_iterator(dataset, config, state=state, process_index=1, process_count=2)
    assert take(resumed, 12) == expected


def test_finite_epochs_end(dataset):
    config = PromptLoaderConfig(split="test", num_epochs=2)
    assert len(take(iter(prompt_dataset(dataset, config, 0, 1)), 100)) == 4


def test_bad_settings_are_reported(dataset):
    with pytest.raises(ValueError, match="no problems in split 'complement'"):
        prompt_dataset(dataset, PromptLoaderConfig(split="complement"), 0, 1)
    with pytest.raises(ValueError, match="process_index 2"):
        prompt_dataset(dataset, PromptLoaderConfig(), 2, 2)
    with pytest.raises(ConfigError, match="template"):
        PromptLoaderConfig(template="no placeholder")
