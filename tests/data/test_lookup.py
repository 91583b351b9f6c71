"""`find_data_set`: the one lookup of a data set by name ('mini' or a built folder)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from jaxopt_rl.data.lookup import (
    command_cache_dir,
    data_set_root,
    find_data_set,
    missing_data_set,
)
from jaxopt_rl.data.mini import mini_built_dir


def test_mini_and_a_folder_name_the_same_data_set(tmp_path):
    mini = find_data_set("mini")
    assert mini.root == mini_built_dir() and mini.cache_dir == mini_built_dir() / "materialized"
    copy = tmp_path / "copy"
    shutil.copytree(mini_built_dir(), copy, ignore=shutil.ignore_patterns("materialized"))
    by_folder = find_data_set(str(copy), tmp_path / "cache")
    assert by_folder.problem_ids() == mini.problem_ids()
    assert by_folder.cache_dir == tmp_path / "cache"


def test_a_folder_without_a_built_data_set_is_refused_by_name(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"no manifest\.json") as error:
        find_data_set(str(tmp_path))
    assert str(tmp_path) in str(error.value)
    assert data_set_root(str(tmp_path)) == tmp_path


def test_a_config_is_checked_and_refused_with_the_same_line_and_its_key(tmp_path):
    assert missing_data_set("mini") is None
    line = missing_data_set(str(tmp_path))
    assert line is not None and str(tmp_path) in line
    with pytest.raises(FileNotFoundError) as bare:
        find_data_set(str(tmp_path))
    assert str(bare.value) == line
    with pytest.raises(FileNotFoundError) as keyed:
        find_data_set(str(tmp_path), key="data.dataset")
    assert str(keyed.value) == f"data.dataset={str(tmp_path)!r}: {line}"


def test_command_line_tools_cache_outside_the_data_set():
    assert command_cache_dir("mini") == Path("runs/cache/mini")
    assert command_cache_dir("/data/sets/dmc_optim") == Path("runs/cache/dmc_optim")
