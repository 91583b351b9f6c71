"""Problems, tests, reference durations and execution records: formats, loaders and the builder.

The public face (each name is loaded from its module on first use, so importing one part never
pays for the others: the Grain loader, the builder and Parquet are heavy):

    from jaxopt_rl.data import find_data_set, prompt_iterator, load_record_batch
    dataset = find_data_set("mini")              # DMC-Optim-mini, shipped; or a built folder
    dataset.problem_ids("train")
    prompts = prompt_iterator(dataset, PromptLoaderConfig(seed=0))   # Grain, checkpointable
    batch, index = load_record_batch("records.jsonl")                # -> rewards.RecordBatch

  lookup              find_data_set: a data set by the name a config gives ('mini' or a
                      built folder), the one lookup every command and run goes through
  store               Dataset, load_dataset, ProblemRecord: a built data set on disk
  mini                load_mini, load_score_tasks: DMC-Optim-mini
  references          ReferenceTimes: stored reference durations per problem `[T, H]`
  execution_records   record files <-> ExecutionRecord / ReferenceDuration / RecordBatch
  execution_table     the one status-and-provenance rule for a duration, the grouped
                      ExecutionTable and the one RecordBatch constructor (`record_batch`)
  loader              the Grain prompt pipeline (PromptLoaderConfig, prompt_iterator)
  score_tasks         score-based (RiVER) tasks and their hidden instances
  schema, writer, builder, codecontests, materialize, stats, filterability: building data sets
"""

from __future__ import annotations

from jaxopt_rl.lazy import lazy_exports

_EXPORTS = {
    "Dataset": "store",
    "ProblemRecord": "store",
    "load_dataset": "store",
    "find_data_set": "lookup",
    "load_mini": "mini",
    "load_score_tasks": "mini",
    "ReferenceTimes": "references",
    "ExecutionRecord": "execution_records",
    "ReferenceDuration": "execution_records",
    "RecordFileError": "execution_records",
    "RecordIndex": "execution_records",
    "batch_from_records": "execution_records",
    "load_record_batch": "execution_records",
    "write_records": "execution_records",
    "PromptLoaderConfig": "loader",
    "prompt_dataset": "loader",
    "prompt_iterator": "loader",
    "render_prompt": "loader",
    "ScoreTask": "score_tasks",
    "read_score_tasks": "score_tasks",
    "SchemaError": "schema",
}

__all__ = sorted(_EXPORTS)


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
