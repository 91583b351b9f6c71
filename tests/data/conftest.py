"""Fixtures for the data tests: a subprocess sandbox and a small built dataset (session-wide)."""

from __future__ import annotations

import json

import pytest

from jaxopt_rl.config import from_dict
from jaxopt_rl.data.builder import BuildConfig, build
from tests.data.fakes import SubprocessSandbox, sum_problem_dict


def small_config(tmp_path, source, **sections) -> BuildConfig:
    """A fast build config over a JSONL source: 2 attempts x 1 round per campaign."""
    data = {
        "output_dir": str(tmp_path / "out"),
        "work_dir": str(tmp_path / "work"),
        "source": {"kind": "jsonl", "paths": [str(source)]},
        "sandbox": {"problem_workers": 2, "max_in_flight": 4, "time_cap_s": 5.0},
        "correctness_campaign": {"attempts": 2, "rounds": 1},
        "optimization_campaign": {"attempts": 2, "rounds": 1},
        "correctness_filter": {"min_correct": 2},
        "durations": {"kinds": ["T0", "TO"]},
        "split": {"test_fraction": 0.5},
    }
    for key, value in sections.items():
        data[key] = {**data.get(key, {}), **value} if isinstance(value, dict) else value
    return from_dict(BuildConfig, data)


def write_jsonl(path, rows) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


@pytest.fixture()
def sandbox():
    sb = SubprocessSandbox(workers=2)
    yield sb
    sb.close()


@pytest.fixture(scope="session")
def built_dataset(tmp_path_factory):
    """Two sum problems built end to end through the subprocess sandbox (recipes for TO > 200 chars)."""
    tmp = tmp_path_factory.mktemp("built")
    source = tmp / "problems.jsonl"
    write_jsonl(source, [sum_problem_dict("sum-001"), sum_problem_dict("sum-002")])
    config = small_config(tmp, source, export={"inline_max_chars": 200})
    sb = SubprocessSandbox(workers=2)
    try:
        report = build(config, sandbox=sb)
    finally:
        sb.close()
    return report
