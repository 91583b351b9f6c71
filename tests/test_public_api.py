"""Public names promised by the issues import from where they were promised, and the package
faces stay narrow (internals are imported from their modules, never re-exported by accident)."""

from __future__ import annotations

import importlib

import pytest

# (module, name): the exact places earlier issues fixed.
PROMISED = [
    ("jaxopt_rl.rewards", "per_test_percentile"),
    ("jaxopt_rl.rewards", "qar"),
    ("jaxopt_rl.rewards", "qp"),
    ("jaxopt_rl.rewards", "compose"),
    ("jaxopt_rl.rewards", "river_rewards"),
    ("jaxopt_rl.rewards", "pass_at_k"),
    ("jaxopt_rl.rewards", "signals"),
    ("jaxopt_rl.rewards", "rewards"),
    ("jaxopt_rl.rewards", "EnvConfig"),
    ("jaxopt_rl.rewards", "prepare_references"),
    ("jaxopt_rl.training.grpo", "advantages"),
    ("jaxopt_rl.evaluation.metrics", "pass_at_k"),
    ("jaxopt_rl.evaluation.metrics", "pass_at_k_p_tau"),
    ("jaxopt_rl.evaluation.metrics", "win_rates"),
    ("jaxopt_rl.evaluation.ranking_metrics", "RANKING_METRICS"),
    ("sandbox_cluster", "connect"),
    ("sandbox_cluster", "TestCase"),
    ("sandbox_cluster", "Limits"),
    ("sandbox_cluster", "Status"),
]


@pytest.mark.parametrize("module, name", PROMISED)
def test_promised_name_imports(module, name):
    assert getattr(importlib.import_module(module), name) is not None


def test_pass_at_k_is_one_function_in_two_places():
    from jaxopt_rl import rewards
    from jaxopt_rl.evaluation import metrics

    assert rewards.pass_at_k is metrics.pass_at_k


def test_rewards_face_is_narrow():
    rewards = importlib.import_module("jaxopt_rl.rewards")
    # The environment, the kernels users call alone, and nothing of the layouts' internals.
    assert len(rewards.__all__) <= 30
    for internal in ("qar_grouped", "qp_by_problem", "masked_quantile", "reference_pool",
                     "RANKING_METRICS", "win_rates", "filter_relative"):
        assert internal not in rewards.__all__
        assert not hasattr(rewards, internal), internal
    for name in rewards.__all__:
        getattr(rewards, name)


def test_data_face_resolves_every_name():
    data = importlib.import_module("jaxopt_rl.data")
    for name in data.__all__:
        assert getattr(data, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        data.nope  # noqa: B018


def test_rollouts_face_resolves_every_name_from_its_module():
    rollouts = importlib.import_module("jaxopt_rl.rollouts")
    from jaxopt_rl.rollouts.batch import RolloutBatch
    from jaxopt_rl.rollouts.execution_table import results_batch

    assert rollouts.RolloutBatch is RolloutBatch and rollouts.results_batch is results_batch
    for name in rollouts.__all__:
        assert getattr(rollouts, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        rollouts.nope  # noqa: B018
