"""Host-side rollouts: prompt -> completions -> program -> sandbox -> records -> rewards -> group.

Shared by training and evaluation. Imports point down only: rollouts -> {sampling, rewards, data,
the `sandbox_cluster` API}; nothing below imports this package.

  execute   the one place a sandbox `TestResult` becomes a typed `ExecutionRecord`
"""

from jaxopt_rl.rollouts.execute import TestSpec, execution_record, execution_records, timing_of

__all__ = ["TestSpec", "execution_record", "execution_records", "timing_of"]
