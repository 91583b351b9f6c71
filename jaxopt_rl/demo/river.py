"""The RiVER demo, top to bottom, as named phases (`jaxopt-rl demo river`):

    instances   each task's held-out instances, generated in the sandbox by the task's own
                generator under a seed disjoint from its training instances'
    train       one GRPO run per method (`methods`: RiVER, Raw-GRPO, Rank-uniform, ...) and
                seed from the shipped SFT checkpoint, identical budgets; every sampled rollout
                logged (`loop.log_rollouts`)
    sample      `eval.samples` completions per task from the SFT start and every final policy
    evaluate    ONE shared, shuffled pass: every distinct program (the references, the final
                samples, every program sampled in training) run once on its task's held-out
                instances and scored by the task's checker
    report      report.md, report.json, PNGs (`demo.river_report`)

Output folder (`output_dir`, default runs/demo_river): `<method>/seed<k>/` (each a training
run: metrics.jsonl, rollouts.jsonl, tensorboard/, checkpoints/, hf/ its final policy), `eval/`
(held-out instances, every program's held-out results, the samples), the report files. A
folder left by an earlier demo is resumed (a finished run is not retrained); `--fresh` starts
over. Pure measures live in `demo.river_scores`.
"""

from __future__ import annotations

import dataclasses
import gzip
import json
import random
import time
from pathlib import Path
from typing import Any

from jaxopt_rl.demo.pipeline import Phases, demo_session
from jaxopt_rl.demo.river_config import RiverDemoConfig, run_name
from jaxopt_rl.demo.river_scores import program_key
from jaxopt_rl.training.config import TrainConfig

SFT = "sft"


def run_config(config: RiverDemoConfig, method: str, seed: int) -> TrainConfig:
    """The TrainConfig of one run: the shared one with its env, seed and folder."""
    return dataclasses.replace(config.train, env=method, seed=seed,
                               output_dir=str(Path(config.output_dir) / run_name(method, seed)))


def held_out_task(task, config: RiverDemoConfig):
    """The task with its held-out instance set (count and a seed of its own)."""
    return dataclasses.replace(task, hidden_count=config.eval.held_out_instances,
                               hidden_seed=f"{task.hidden_seed}/{config.eval.held_out_seed}")


def run_river_demo(config: RiverDemoConfig, *, fresh: bool = False, log=print,
                   sandbox: Any = None) -> tuple[dict[str, Path], dict[str, Any]]:
    """Run every phase; returns (the files written, the report.json content)."""
    from jaxopt_rl.data.score_tasks import hidden_instances
    from jaxopt_rl.demo.river_report import write_river_report
    from jaxopt_rl.rollouts.score_tasks import ScoreTaskSet
    from jaxopt_rl.training.checkpoints import export_pretrained
    from jaxopt_rl.training.loop import train
    from jaxopt_rl.training.metrics import read_metrics, read_rollouts

    started = time.perf_counter()
    phases = Phases()
    with demo_session(config, fresh, sandbox) as (out, sandbox):
        (out / "eval").mkdir(exist_ok=True)
        tasks = ScoreTaskSet.named(config.train.data.dataset)
        task_ids = [t for t in tasks.problem_ids(config.train.data.split)
                    if not config.train.data.problems or t in config.train.data.problems]
        with phases("instances", log):
            instances = {t: hidden_instances(held_out_task(tasks.task(t), config), sandbox)
                         for t in task_ids}
            _write_json(out / "eval" / "held_out_instances.json.gz", instances)
        policies = {SFT: Path(config.train.init_from)}
        rollouts: dict[str, list[dict]] = {}
        for method in config.methods:
            for seed in config.seeds:
                name = run_name(method, seed)
                with phases(f"train {name}", log):
                    run_out = train(run_config(config, method, seed), sandbox=sandbox, log=log)
                    policies[name] = export_pretrained(run_out, run_out / "hf")
                rollouts[name] = with_programs(read_rollouts(run_out))
        with phases("sample", log):
            samples = {name: sample_tasks(path, tasks, task_ids, config)
                       for name, path in policies.items()}
            _write_json(out / "eval" / "samples.json.gz", samples)
        with phases("evaluate", log):
            programs = {t: _programs_of(t, tasks, samples, rollouts) for t in task_ids}
            results = evaluate_programs(programs, tasks, instances, sandbox, config.eval.seed,
                                        log)
            _write_json(out / "eval" / "held_out_results.json.gz", results)
        training = {name: read_metrics(out / name) for name in rollouts}
        with phases("report", log):
            paths = write_river_report(
                out, config=config, tasks={t: tasks.task(t) for t in task_ids},
                results=results, samples=samples, rollouts=rollouts, training=training,
                phases_s=dict(phases.seconds), wall_s=round(time.perf_counter() - started, 2))
    paths["training runs (metrics, rollouts, tensorboard/, hf/)"] = out
    paths["held-out instances, samples and results"] = out / "eval"
    return paths, json.loads(paths["report_json"].read_text())


def sample_tasks(policy: Path, tasks, task_ids: list[str], config: RiverDemoConfig
                 ) -> dict[str, list[str | None]]:
    """`eval.samples` programs per task from one policy (one sampler call for all tasks)."""
    from jaxopt_rl.evaluation.evaluate import load_policy, sample_programs
    from jaxopt_rl.model.prompt import problem_prompt

    model, tokenizer = load_policy(policy)
    ev = config.eval
    prompts = {t: problem_prompt(tasks.record(t), config.train.prompt) for t in task_ids}
    return sample_programs(model, tokenizer, None, task_ids, ev.samples, ev.max_new_tokens,
                           ev.temperature, ev.seed, ev.samples * len(task_ids), prompts=prompts)


def with_programs(records: list[dict]) -> list[dict]:
    """Rollout records (`loop.log_rollouts`) with the program of each completion, extracted
    once (None: the completion holds no closed Python block)."""
    from jaxopt_rl.model.prompt import extract_program

    return [dict(r, program=extract_program(r["text"])) for r in records]


def _programs_of(task_id: str, tasks, samples, rollouts) -> list[str]:
    """Every distinct program to evaluate on a task: its references, then every sample and
    every program sampled in training (first seen first)."""
    found = [h.code for h in tasks.task(task_id).heuristics]
    found += [p for drawn in samples.values() for p in drawn[task_id] if p is not None]
    found += [r["program"] for records in rollouts.values() for r in records
              if r["problem_id"] == task_id and r["program"] is not None]
    return list(dict.fromkeys(found))


def evaluate_programs(programs: dict[str, list[str]], tasks, instances: dict[str, list[str]],
                      sandbox, seed: int, log=print) -> dict[str, dict[str, dict]]:
    """`{task: {program key: {"code", "valid": [M], "score": [M]}}}`: every program run once on
    its task's held-out instances, submitted in a seeded shuffled order (no policy gets a
    quieter slice of the machine), judged as training judges a rollout
    (`rollouts.score_tasks.scores_from_results`: valid = ran and scored finite; the score is
    kept in the task's own orientation, None where invalid). A run the sandbox reached no
    verdict on is retried once, then the evaluation stops: never a made-up score."""
    from jaxopt_rl.rollouts.score_tasks import scores_from_results
    from sandbox_cluster.api import Limits, Status, TestCase

    jobs = [(t, code) for t, codes in programs.items() for code in codes]
    random.Random(seed).shuffle(jobs)
    log(f"evaluating {len(jobs)} distinct programs on "
        f"{sum(len(v) for v in instances.values())} held-out instances")

    def submit(task_id: str, code: str):
        task = tasks.task(task_id)
        return sandbox.submit(code, [TestCase(x) for x in instances[task_id]],
                              Limits(time_s=task.time_limit_s, memory_mb=task.memory_mb),
                              interface="function", checker=task.checker)

    futures = [submit(t, code) for t, code in jobs]
    results: dict[str, dict[str, dict]] = {t: {} for t in programs}
    for (task_id, code), future in zip(jobs, futures):
        objective = tasks.task(task_id).objective
        got = future.result()
        _, valid_M, inconclusive = scores_from_results([got], objective)
        if inconclusive[0]:
            got = submit(task_id, code).result()
            _, valid_M, inconclusive = scores_from_results([got], objective)
            if inconclusive[0]:
                detail = next(r.detail for r in got if r.status is Status.INFRA_ERROR)
                raise RuntimeError(f"task {task_id!r}: the sandbox reached no verdict twice on "
                                   f"a held-out run ({detail}); the evaluation stops rather "
                                   "than score it")
        results[task_id][program_key(code)] = {
            "code": code, "valid": valid_M[0].tolist(),
            "score": [float(r.score) if ok else None for r, ok in zip(got, valid_M[0])]}
    return results


def _write_json(path: Path, value: Any) -> None:
    with gzip.open(path, "wt") as f:
        json.dump(value, f)
