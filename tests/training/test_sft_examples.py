"""SFT examples of score tasks: every reference heuristic that fits, repeated as
`data.heuristic_copies` says, in expected-rank order."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path

import pytest

from jaxopt_rl.config import ConfigError
from jaxopt_rl.data.mini import mini_score_tasks_dir
from jaxopt_rl.model.tokenizer import Tokenizer
from jaxopt_rl.training.config import load_train_config
from jaxopt_rl.training.sft import sft_examples

ROOT = Path(__file__).resolve().parents[2]


def _config(tmp_path, *overrides):
    tasks = tmp_path / "tasks"
    if not tasks.exists():
        shutil.copytree(mini_score_tasks_dir() / "trucks", tasks / "trucks")
    return load_train_config(ROOT / "configs/sft/tiny_river.yaml",
                             [f"data.dataset={tasks}", *overrides])


def test_copies_follow_the_expected_rank_and_default_to_one(tmp_path):
    config = _config(tmp_path, "data.heuristic_copies=[1, 4]")
    examples, too_long = sft_examples(config, Tokenizer.default())
    # trucks.yaml: largest_first (1), input_order_greedy (2), sorted_snake (3), alternate (4)
    assert Counter(e.solution_id for e in examples) == {
        "largest_first": 1, "input_order_greedy": 4, "sorted_snake": 1, "alternate": 1}
    assert too_long == 0
    none = _config(tmp_path, "data.heuristic_copies=[0, 2, 0]")
    examples, _ = sft_examples(none, Tokenizer.default())
    assert Counter(e.solution_id for e in examples) == {"input_order_greedy": 2, "alternate": 1}


def test_a_heuristic_longer_than_a_row_is_skipped_and_the_ranks_shift(tmp_path):
    tokenizer = Tokenizer.default()
    full = sft_examples(_config(tmp_path), tokenizer)[0]
    lengths = {e.solution_id: len(e.prompt) + len(e.completion) for e in full}
    # a horizon that only the longest heuristic exceeds: it is skipped, and copies[0] now
    # applies to the best heuristic that fits
    longest = max(lengths, key=lengths.get)
    horizon = sorted(lengths.values())[-2]
    examples, too_long = sft_examples(
        _config(tmp_path, f"grpo.horizon={horizon}", "rollout.max_new_tokens=16",
                "data.heuristic_copies=[3]"), tokenizer)
    assert too_long == 1 and longest not in {e.solution_id for e in examples}
    best_kept = next(s for s in ("largest_first", "input_order_greedy", "sorted_snake",
                                 "alternate") if s != longest)
    assert Counter(e.solution_id for e in examples)[best_kept] == 3


def test_copies_are_refused_for_problems_without_ranked_heuristics(tmp_path):
    config = load_train_config(ROOT / "configs/sft/tiny_mini.yaml",
                               ["data.heuristic_copies=[1, 2]"])
    with pytest.raises(ConfigError, match=r"data\.heuristic_copies"):
        sft_examples(config, Tokenizer.default())


def test_negative_copies_name_the_key():
    with pytest.raises(ConfigError, match="heuristic_copies"):
        load_train_config(ROOT / "configs/sft/tiny_river.yaml", ["data.heuristic_copies=[-1]"])
