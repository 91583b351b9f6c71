"""Host-side rollouts: prompts -> completions -> programs -> sandbox -> execution table ->
rewards -> one `RolloutBatch` per sampler call, the only thing the trainer takes from here.

Imports point down only: rollouts -> {sampling, model, rewards, data, the `sandbox_cluster`
API}; nothing below imports this package. The names below load from their modules on first
use, so importing one part (e.g. `rollouts.config` for a train config) never pays for the rest.

  worker            RolloutWorker: sample -> execute -> score, in named phases
  batch             RolloutBatch: P prompts x G rollouts, scored, with the columns the trainer
                    filters on (defined, staleness, signal)
  execution_table   a sampler call's sandbox results -> one ExecutionTable -> one RecordBatch,
                    as arrays (`results_batch`)
  execute           where a sandbox result's provenance is settled (`timing_of`) and a result
                    becomes a typed `ExecutionRecord` (reference re-timing, the timing pass)
  problems, score_tasks   what a rollout runs of a problem, of a score (RiVER) task
  references        each problem's reference table, prepared once per run
  testing           a RolloutBatch from arrays, without a model or a sandbox (a test double)
"""

from __future__ import annotations

from jaxopt_rl.lazy import lazy_exports

_EXPORTS = {
    "RolloutBatch": "batch",
    "has_signal": "batch",
    "results_batch": "execution_table",
    "TestSpec": "execute",
    "execution_record": "execute",
    "execution_records": "execute",
    "timing_of": "execute",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
