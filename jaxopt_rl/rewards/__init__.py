"""Reward kernels of docs/design/rewards.md: pure, jitted, vectorised over a padded batch of
rollouts.

What a user calls is re-exported here: the environment (`EnvConfig`, `load_env_config`,
`RecordBatch`, `prepare_references`, `signals`, `rewards`) and the kernels that make sense
alone (`per_test_percentile`, `qar`, `qp`, `compose`, `river_rewards` and its baselines).
Everything else is a step inside the environment; import it from its module.

The modules, in the order an environment uses them:

  records             RecordBatch (the padded, grouped input), status classes, test kinds
  calibration         sanitise / affine-correct stored reference durations (eq. 10)
  reductions          masked reductions shared by the kernels (quantiles, sums over tests)
  filters             pre-execution filters: which optimization tests are used
  limits              intended per-test limits and post-filtering
  pool                references prepared for ranking (keys, ranks), once per problem set
  percentiles         per-test percentiles, QAR, QP (grouped `[P, G, T]` kernels)
  composition         (c_cor, c~, g, q) -> reward (`compose`); quality maps; naive baselines
  river               RiVER and its baselines for score-based tasks; feedback resolution
  reference_table     a problem set's references prepared once for an environment
  env_config          EnvConfig: the typed environment, loaded from configs/env/*.yaml
  environment         an EnvConfig + a RecordBatch -> signals and rewards (one jit)

Evaluation metrics (pass@k, pass@k(p_tau), win rates) and the ranking-metric study live in
`jaxopt_rl.evaluation`; `pass_at_k` is also reachable here, where it was first promised.
"""

from jaxopt_rl.rewards.calibration import sanitize_reference_durations
from jaxopt_rl.rewards.composition import QUALITY_MAPS, compose, multitask_rewards, naive_reward
from jaxopt_rl.rewards.env_config import EnvConfig, available_envs, load_env_config
from jaxopt_rl.rewards.environment import rewards, rewards_and_signals, signals
from jaxopt_rl.rewards.percentiles import mean_percentiles, per_test_percentile, qar, qp
from jaxopt_rl.rewards.records import RecordBatch
from jaxopt_rl.rewards.reference_table import ReferenceTable, check_table, prepare_references
from jaxopt_rl.rewards.river import (
    group_feedback_resolution,
    instance_norm_rewards,
    rank_uniform_rewards,
    raw_binary_rewards,
    raw_grpo_rewards,
    river_rewards,
)

__all__ = [
    "QUALITY_MAPS",
    "EnvConfig",
    "RecordBatch",
    "ReferenceTable",
    "available_envs",
    "check_table",
    "compose",
    "group_feedback_resolution",
    "instance_norm_rewards",
    "load_env_config",
    "mean_percentiles",
    "multitask_rewards",
    "naive_reward",
    "pass_at_k",
    "per_test_percentile",
    "prepare_references",
    "qar",
    "qp",
    "rank_uniform_rewards",
    "raw_binary_rewards",
    "raw_grpo_rewards",
    "rewards",
    "rewards_and_signals",
    "river_rewards",
    "sanitize_reference_durations",
    "signals",
]


def __getattr__(name: str):
    # The one name promised here that now lives a layer up; loaded on first use so that the
    # reward layer never imports evaluation at start-up.
    if name == "pass_at_k":
        from jaxopt_rl.evaluation.metrics import pass_at_k

        return pass_at_k
    raise AttributeError(f"module 'jaxopt_rl.rewards' has no attribute {name!r}")
