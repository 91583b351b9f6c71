"""Build configs: every shipped YAML loads; partial sections keep their round's defaults."""

from __future__ import annotations

from pathlib import Path

import pytest

from jaxopt_rl.config import ConfigError, from_dict, load_config
from jaxopt_rl.data.builder import BuildConfig

CONFIGS = sorted((Path(__file__).parents[3] / "configs" / "data").glob("*.yaml"))


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_configs_load(path):
    config = load_config(BuildConfig, path)
    assert config.output_dir
    assert "TO" in config.durations.kinds


def test_defaults_are_the_papers_table_13():
    config = BuildConfig()
    assert config.correctness_campaign.schedule == ("edge", "small", "sample")
    assert config.optimization_campaign.schedule == ("edge", "large", "sample")
    assert config.correctness_campaign.attempts == 10 and config.correctness_campaign.rounds == 5
    c, o = config.correctness_filter, config.optimization_filter
    assert (c.min_correct, c.max_correct_drop, c.max_false_positive, c.timeout_fraction) == (
        5, 0.25, 0.05, 0.2)
    assert (o.min_correct, o.max_false_positive, o.timeout_fraction, o.timeout_is_success) == (
        1, None, 0.9, True)
    assert (c.timeout_cap, c.failure_fraction, c.failure_cap) == (0.25, 0.4, 0.30)
    assert config.filterability.threshold == 0.3


def test_partial_sections_keep_round_defaults():
    config = from_dict(BuildConfig, {"optimization_campaign": {"attempts": 2},
                                     "optimization_filter": {"max_correct_drop": 0.5}})
    assert config.optimization_campaign.schedule == ("edge", "large", "sample")
    assert config.optimization_filter.timeout_is_success
    assert config.optimization_filter.max_correct_drop == 0.5


@pytest.mark.parametrize("data, key", [
    ({"correctness_campaign": {"schedule": ["edge", "huge"]}}, "correctness_campaign.schedule"),
    ({"correctness_filter": {"timeout_fraction": 1.5}}, "correctness_filter.timeout_fraction"),
    ({"source": {"kind": "codecontests"}}, "source.paths"),
    ({"durations": {"kinds": ["T0"]}}, "durations.kinds"),
    ({"sandbox": {"max_in_flight": 0}}, "sandbox.max_in_flight"),
    ({"split": {"test_fracton": 0.2}}, "split.test_fracton"),
])
def test_bad_values_name_the_key(data, key):
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        from_dict(BuildConfig, data)
