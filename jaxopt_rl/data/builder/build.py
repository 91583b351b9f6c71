"""`build(config)`: the whole DMC-Optim construction, stage by stage (docs/design/dataset-eval.md
§2).

    00 load            sources -> problems (malformed ones reported, never fatal)
    01 decontaminate   statement overlap with the given benchmarks + statement check
    02 solution_types  >= 1 correct and >= 1 incorrect Python solution
    03 validate        re-execute on T0; drop failing "correct" solutions
    04 gen_correctness T+ campaign (edge/small/sample), expected outputs by agreement
    05 exec_correctness  every solution on T+
    06 filter_correctness Table 13 correctness round
    07 gen_optimization  TO campaign (edge/large/sample) on the survivors
    08 exec_optimization every solution on TO
    09 filter_optimization Table 13 optimization round
    10 intersect       kept by every filtering pass
    11 non_empty       T+ and TO both non-empty
    12 durations       duration traces of the verified-correct references
    13 filterability   robust CV(TO) >= 0.3 (counted; the rest form the complement pool)
    14 split           train / test over the filterable pool (set-level, seeded, stable)

Stages 01-13 are per problem and checkpointed (`pipeline`); the split and the export are
recomputed from the checkpoints every run (cheap and deterministic).
"""

from __future__ import annotations

import dataclasses
import hashlib
import platform
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from jaxopt_rl.config import to_dict
from jaxopt_rl.data.builder import campaigns, filtering, selection, timing, validation
from jaxopt_rl.data.builder.config import BuildConfig
from jaxopt_rl.data.builder.execution import Executor
from jaxopt_rl.data.builder.pipeline import (
    Checkpoints,
    FunnelRow,
    ProblemTrace,
    Stage,
    StageContext,
    funnel,
    run_stages,
)
from jaxopt_rl.data.builder.sources import Rejection, attach_generators, read_jsonl, read_mini
from jaxopt_rl.data.schema import Problem
from jaxopt_rl.data.writer import DatasetWriter, light_variant


def default_stages(config: BuildConfig) -> list[Stage]:
    c = config
    # Stages that execute programs also depend on the envelope they ran under.
    caps = {"time_cap_s": c.sandbox.time_cap_s, "memory_mb": c.sandbox.memory_mb}
    return [
        Stage("01_decontaminate", "decontamination + statement check", selection.decontaminate,
              c.decontamination),
        Stage("02_solution_types", ">= 1 correct and >= 1 incorrect Python solution",
              selection.solution_types, c.solution_types),
        Stage("03_validate", "re-execute solutions on T0", validation.validate,
              [c.validation, caps]),
        Stage("04_gen_correctness", "generate T+ (edge/small/sample)",
              partial(campaigns.generate, campaign="correctness"), [c.correctness_campaign, caps]),
        Stage("05_exec_correctness", "execute all solutions on T+",
              partial(campaigns.execute, campaign="correctness"), caps),
        Stage("06_filter_correctness", "filter T+ (correctness round)",
              partial(filtering.filter_stage, campaign="correctness"), c.correctness_filter,
              version=2),
        Stage("07_gen_optimization", "generate TO (edge/large/sample)",
              partial(campaigns.generate, campaign="optimization"),
              [c.optimization_campaign, caps]),
        Stage("08_exec_optimization", "execute all solutions on TO",
              partial(campaigns.execute, campaign="optimization"), caps),
        Stage("09_filter_optimization", "filter TO (optimization round)",
              partial(filtering.filter_stage, campaign="optimization"), c.optimization_filter,
              version=2),
        Stage("10_intersect", "kept by every filtering pass", filtering.intersect),
        Stage("11_non_empty", "non-empty T+ and TO", filtering.non_empty),
        Stage("12_durations", "reference duration traces", timing.durations, [c.durations, caps]),
        Stage("13_filterability", "duration-filterable (robust CV on TO)",
              timing.filterability, c.filterability, counts=timing.counted_if_filterable),
    ]


@dataclass
class BuildReport:
    output_dir: Path
    funnel: list[FunnelRow]
    rejections: list[dict[str, Any]]
    splits: dict[str, int]
    seconds: float

    @property
    def incomplete(self) -> list[dict[str, Any]]:
        return [r for r in self.rejections if r["outcome"] in ("error", "pending")]


@dataclass
class SourceTally:
    """What the source yielded, counted while it streams (the funnel's load row)."""

    problems: int = 0
    correct: int = 0
    incorrect: int = 0
    rejections: list[Rejection] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)


def iter_source(config: BuildConfig, tally: SourceTally) -> Iterator[Problem]:
    """Problems of the configured source, streamed in source order (ids ascending for mini);
    rejections and counts go to `tally`."""
    source = config.source
    if source.kind == "mini":
        from jaxopt_rl.data.mini import mini_sources_dir

        roots = [Path(p) for p in source.paths] or [mini_sources_dir()]
        if source.problem_ids:  # cheap to check before anything runs
            present = {p.name for root in roots if root.is_dir() for p in root.iterdir()}
            unknown = sorted(set(source.problem_ids) - present)
            if unknown:
                raise ValueError(f"source.problem_ids: not in {[str(r) for r in roots]}: {unknown}")
        items = (item for root in roots for item in read_mini(root))
    elif source.kind == "codecontests":
        from jaxopt_rl.data.codecontests import read_shards

        items = read_shards(source.paths)
    else:
        items = (item for path in source.paths for item in read_jsonl(Path(path)))
    wanted = set(source.problem_ids)
    for item in items:
        if wanted and item.problem_id not in wanted:
            continue
        if source.max_problems is not None and tally.problems >= source.max_problems:
            return
        tally.problems += 1
        tally.seen.add(item.problem_id)
        if isinstance(item, Rejection):
            tally.rejections.append(item)
            continue
        if source.generators_dir:
            item = attach_generators(item, Path(source.generators_dir))
        tally.correct += len(item.solutions_of("correct"))
        tally.incorrect += len(item.solutions_of("incorrect"))
        yield item
    for missing in sorted(wanted - tally.seen):
        tally.rejections.append(Rejection(missing, "load: source.problem_ids names a problem "
                                                   "the source does not have"))


def load_source(config: BuildConfig) -> tuple[list[Problem], list[Rejection]]:
    """The whole source in memory (small sources, tests, inspection)."""
    tally = SourceTally()
    problems = list(iter_source(config, tally))
    return problems, tally.rejections


def assign_splits(filterable: dict[str, bool], seed: int, test_fraction: float) -> dict[str, str]:
    """problem_id -> train | test | complement. The filterable pool is ordered by a seeded hash
    of the id and the first round(fraction x n) go to test: stable when problems come and go."""
    def rank(problem_id: str) -> str:
        return hashlib.sha256(f"{seed}/{problem_id}".encode()).hexdigest()

    pool = sorted((p for p, ok in filterable.items() if ok), key=rank)
    n_test = round(test_fraction * len(pool))
    splits = dict.fromkeys(filterable, "complement")
    splits.update({p: "test" if i < n_test else "train" for i, p in enumerate(pool)})
    return splits


def build(config: BuildConfig, sandbox: Any = None, stages: Sequence[Stage] | None = None,
          progress_factory: Callable[[Sequence[Stage], int], Any] | None = None) -> BuildReport:
    """Run (or resume) the build and write the dataset. `sandbox` defaults to
    `sandbox_cluster.connect(config.sandbox.urls or None)`."""
    started = time.time()
    output_dir = Path(config.output_dir)
    work_dir = Path(config.work_dir) if config.work_dir else output_dir.with_name(output_dir.name + ".work")
    tally = SourceTally()
    problems = iter_source(config, tally)
    stages = list(stages) if stages is not None else default_stages(config)
    resources: dict[str, Any] = {}
    if config.decontamination.statements:
        resources["contamination_index"] = selection.ContaminationIndex(
            selection.read_statements(config.decontamination.statements), config.decontamination.ngram)
    owns_sandbox = sandbox is None
    if owns_sandbox:
        from sandbox_cluster import connect

        sandbox = connect(list(config.sandbox.urls) or None)
    executor = Executor(sandbox, config.sandbox.max_in_flight, config.sandbox.retries)
    resources["timing_executor"] = Executor(sandbox, config.durations.max_in_flight,
                                            config.sandbox.retries)
    context = StageContext(executor=executor, config=config, resources=resources)
    total = _count_hint(config)
    progress = progress_factory(stages, total) if progress_factory else None
    try:
        traces = run_stages(problems, stages, context, work_dir,
                            workers=config.sandbox.problem_workers, progress=progress)
    finally:
        executor.close()
        resources["timing_executor"].close()
        if owns_sandbox and hasattr(sandbox, "close"):
            sandbox.close()
    return export(config, tally, stages, traces, Checkpoints(work_dir), sandbox, started)


def _count_hint(config: BuildConfig) -> int | None:
    """Number of problems for the progress bars, from cheap metadata (folders, lines, Parquet
    footers); None when unknown."""
    source = config.source
    if source.problem_ids:
        return len(source.problem_ids)
    try:
        if source.kind == "mini":
            from jaxopt_rl.data.mini import mini_sources_dir

            roots = [Path(p) for p in source.paths] or [mini_sources_dir()]
            n = sum(1 for r in roots if r.is_dir() for p in r.iterdir()
                    if p.is_dir() and not p.name.startswith((".", "_")))
        elif source.kind == "codecontests":
            import pyarrow.parquet as pq

            from jaxopt_rl.data.codecontests import shard_paths

            n = sum(pq.ParquetFile(p).metadata.num_rows for p in shard_paths(source.paths))
        else:
            n = sum(1 for path in source.paths
                    for line in Path(path).read_text().splitlines() if line.strip())
    except (OSError, ValueError):
        return source.max_problems
    return min(n, source.max_problems or n)


def _rejection_rows(load_rejections: Sequence[Rejection], traces: Sequence[ProblemTrace]):
    rows = [{"problem_id": r.problem_id, "stage": "00_load", "outcome": "dropped",
             "reason": r.reason} for r in load_rejections]
    rows += [{"problem_id": t.problem_id, "stage": t.stage, "outcome": t.outcome,
              "reason": t.reason} for t in traces if t.outcome != "kept"]
    return rows


def export(config: BuildConfig, tally: SourceTally, stages: Sequence[Stage],
           traces: Sequence[ProblemTrace], checkpoints: Checkpoints, sandbox: Any,
           started: float) -> BuildReport:
    """Write the dataset from the traces, reading each kept problem's final checkpoint in turn."""
    kept = sorted((t for t in traces if t.outcome == "kept"), key=lambda t: t.problem_id)
    splits = assign_splits({t.problem_id: t.counted for t in kept}, config.split.seed,
                           config.split.test_fraction)
    split_counts = {s: [0, 0, 0] for s in ("train", "test", "complement")}

    def final_problems() -> Iterator[Problem]:
        for trace in kept:
            problem = checkpoints.load_problem(trace.final_stage, trace.problem_id, trace.final_key)
            problem = dataclasses.replace(problem, meta={**problem.meta,
                                                         "split": splits[trace.problem_id]})
            if config.export.variant == "light":
                problem = light_variant(problem)
            row = split_counts[splits[trace.problem_id]]
            row[0] += 1
            row[1] += len(problem.solutions_of("correct"))
            row[2] += len(problem.solutions_of("incorrect"))
            yield problem

    writer = DatasetWriter(config.output_dir, config.export.include_incorrect,
                           config.export.inline_max_chars)
    for problem in final_problems():
        writer.add(problem)
    rows = funnel(tally.problems, tally.correct, tally.incorrect, stages, traces,
                  f"load {config.source.kind} (Python 3 solutions only)")
    for split, (n, correct, incorrect) in split_counts.items():
        rows.append(FunnelRow(f"14_split_{split}", f"{split} split", n, correct, incorrect))
    rejections = _rejection_rows(tally.rejections, traces)
    timing_state = {
        "backend": "fleet" if config.sandbox.urls else "embedded",
        "urls": list(config.sandbox.urls),
        "sandbox": type(sandbox).__module__ + "." + type(sandbox).__name__,
        "host": platform.node(),
        "python": platform.python_version(),
        "repeats": config.durations.repeats,
        "max_in_flight": config.durations.max_in_flight,
        "time_cap_s": config.sandbox.time_cap_s,
        "calibration": {"kind": "identity", "note": "raw stored durations; calibrate at load"},
    }
    manifest = {
        "name": config.export.name,
        "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "build_config": to_dict(config),
        "funnel": [r.to_json() for r in rows],
        "timing_campaigns": {config.durations.campaign_id: timing_state},
        "incomplete": sum(1 for r in rejections if r["outcome"] in ("error", "pending")),
    }
    output_dir = writer.finish(funnel=[r.to_json() for r in rows], rejections=rejections,
                               manifest=manifest)
    counts = {split: row[0] for split, row in split_counts.items()}
    return BuildReport(output_dir, rows, rejections, counts, time.time() - started)
