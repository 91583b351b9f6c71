"""Reward kernels of spec/rewards.md: pure, jitted, vectorised over a padded batch of rollouts.

The modules, in the order an environment uses them:

  calibration         sanitise / affine-correct stored reference durations (eq. 10)
  filters             pre-execution filters: which optimization tests are used
  limits              intended per-test limits and post-filtering
  pool                references prepared for ranking (keys, ranks), once per problem set
  percentiles         per-test percentiles, QAR, QP (grouped `[P, G, T]` kernels)
  composition         (c_cor, c~, g, q) -> reward (`compose`); quality maps; naive baselines
  river               RiVER and its baselines for score-based tasks; feedback resolution
  ranking_metrics     the 17 ranking metrics of the paper's metric study
  evaluation_metrics  pass@k, pass@k(p_tau), speed win rates
  reference_table     a problem set's references prepared once for an environment
  environment         an EnvConfig + a RecordBatch -> signals and rewards (one jit)
"""

from jaxopt_rl.rewards.calibration import sanitize_reference_durations
from jaxopt_rl.rewards.composition import (
    QUALITY_MAPS,
    compose,
    multitask_rewards,
    naive_reward,
    quality_bucket,
    quality_linear,
    quality_range,
    signed,
)
from jaxopt_rl.rewards.environment import rewards, rewards_and_signals, signals
from jaxopt_rl.rewards.evaluation_metrics import WinRates, pass_at_k, pass_at_k_p_tau, win_rates
from jaxopt_rl.rewards.filters import (
    aggregate_reference_duration,
    filter_absolute,
    filter_identity,
    filter_length,
    filter_relative,
    masked_quantile,
)
from jaxopt_rl.rewards.limits import (
    absolute_limit,
    default_limit,
    post_filter,
    ranked_reference_limit,
    reference_mean_rank,
    relative_limit,
)
from jaxopt_rl.rewards.percentiles import (
    ReferencePool,
    mean_percentiles,
    mean_percentiles_by_problem,
    mean_percentiles_grouped,
    per_test_percentile,
    per_test_percentile_by_problem,
    per_test_percentile_grouped,
    qar,
    qar_by_problem,
    qar_grouped,
    qp,
    qp_by_problem,
    qp_grouped,
    reference_pool,
    reference_ranks,
)
from jaxopt_rl.rewards.ranking_metrics import RANKING_METRICS, RankingMetric, reference_scores
from jaxopt_rl.rewards.records import RecordBatch
from jaxopt_rl.rewards.reference_table import ReferenceTable, check_table, prepare_references
from jaxopt_rl.rewards.river import (
    group_collision_probability,
    group_feedback_resolution,
    instance_norm_rewards,
    rank_uniform_rewards,
    raw_binary_rewards,
    raw_grpo_rewards,
    river_rewards,
)

__all__ = [
    "QUALITY_MAPS",
    "RANKING_METRICS",
    "RankingMetric",
    "RecordBatch",
    "ReferencePool",
    "ReferenceTable",
    "WinRates",
    "absolute_limit",
    "aggregate_reference_duration",
    "check_table",
    "compose",
    "default_limit",
    "filter_absolute",
    "filter_identity",
    "filter_length",
    "filter_relative",
    "group_collision_probability",
    "group_feedback_resolution",
    "instance_norm_rewards",
    "masked_quantile",
    "mean_percentiles",
    "mean_percentiles_by_problem",
    "mean_percentiles_grouped",
    "multitask_rewards",
    "naive_reward",
    "pass_at_k",
    "pass_at_k_p_tau",
    "per_test_percentile",
    "per_test_percentile_by_problem",
    "per_test_percentile_grouped",
    "post_filter",
    "prepare_references",
    "qar",
    "qar_by_problem",
    "qar_grouped",
    "qp",
    "qp_by_problem",
    "qp_grouped",
    "quality_bucket",
    "quality_linear",
    "quality_range",
    "rank_uniform_rewards",
    "ranked_reference_limit",
    "raw_binary_rewards",
    "raw_grpo_rewards",
    "reference_mean_rank",
    "reference_pool",
    "reference_ranks",
    "reference_scores",
    "relative_limit",
    "rewards",
    "rewards_and_signals",
    "river_rewards",
    "sanitize_reference_durations",
    "signals",
    "signed",
    "win_rates",
]
