"""The CPU demo, top to bottom, as named phases (`jaxopt-rl demo`, the README's main job):

    tests       the demo's problems' recipe tests materialised in the sandbox (once; cached)
    train       two GRPO runs from the shipped SFT checkpoint with identical budgets and seeds:
                QP-p30 (collapsed binary: correct and in the fastest 30 % of the reference
                leaderboard) and the correctness-only baseline (`baseline_env`, MC by default),
                each against the embedded sandbox, each run's reference leaderboard timed on
                that sandbox first (`rollout.references: fresh`)
    sample      n completions per problem from the SFT start and from both trained policies
                (the same prompts, temperature and seeds for the three)
    timing      ONE shared, shuffled timing pass: every candidate of the three policies and
                every reference (re-executed `reference_runs` times) of every problem
                (`evaluation.build_dumps`), so no policy gets a quieter slice of the machine;
                a second such pass for the held-out problems
    replay      pass@k(p_tau) with 95 % bootstrap intervals over problems, ranked against the
                references of that same pass (`evaluation.replay`, references="fresh")
    report      runs/demo/report.md, report.json, PNGs (`demo.report`)

Output folder (`output_dir`, default runs/demo): `qp_p30/` and `baseline/` (each a training
run: metrics.jsonl, tensorboard/, checkpoints/, summary.md, hf/ its final policy), `eval/` (the
dumps and eval JSONs), the report files. A folder left by an earlier demo is resumed: a finished
training run is not retrained (its checkpoint is at the last step); `--fresh` starts over.

The problems evaluated are the problems trained on: a 4 M-parameter model memorises, it does not
generalise to unseen problems; the held-out split is evaluated too and reported beside it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import shutil
import time
from pathlib import Path
from typing import Any

import yaml

from jaxopt_rl.config import to_dict
from jaxopt_rl.demo.config import DemoConfig
from jaxopt_rl.training.config import TrainConfig

RUNS = ("qp_p30", "baseline")
POLICIES = ("sft", *RUNS)


class Phases:
    """Wall seconds per named phase, in order."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str, log=print):
        log(f"== {name}")
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = round(self.seconds.get(name, 0.0)
                                       + time.perf_counter() - start, 2)


def run_config(config: DemoConfig, run: str) -> TrainConfig:
    """The TrainConfig of one of the two GRPO runs: the shared one with its env and folder."""
    env = config.qp_env if run == "qp_p30" else config.baseline_env
    return dataclasses.replace(config.train, env=env,
                               output_dir=str(Path(config.output_dir) / run))


def problem_ids(config: DemoConfig, dataset) -> tuple[list[str], list[str]]:
    """(the problems trained and evaluated on, the held-out problems)."""
    data = config.train.data
    trained = [p for p in dataset.problem_ids(data.split)
               if not data.problems or p in data.problems]
    held_out = ([p for p in dataset.problem_ids(config.eval.held_out_split)
                 if p not in trained] if config.eval.held_out_split else [])
    return trained, held_out


def run_demo(config: DemoConfig, *, fresh: bool = False, log=print,
             sandbox: Any = None) -> tuple[dict[str, Path], dict[str, Any]]:
    """Run every phase; returns (the files written, the report.json content)."""
    from jaxopt_rl.data.lookup import find_data_set
    from jaxopt_rl.data.materialize import ensure_materialized
    from jaxopt_rl.demo.report import write_report
    from jaxopt_rl.evaluation.dump import write_dump
    from jaxopt_rl.evaluation.evaluate import build_dumps, load_policy, sample_programs
    from jaxopt_rl.evaluation.replay import eval_env, replay
    from jaxopt_rl.training.checkpoints import export_pretrained
    from jaxopt_rl.training.loop import train
    from jaxopt_rl.training.metrics import read_metrics

    started = time.perf_counter()
    phases = Phases()
    with demo_session(config, fresh, sandbox) as (out, sandbox):
        dataset = find_data_set(config.train.data.dataset, key="train.data.dataset")
        trained, held_out = problem_ids(config, dataset)
        with phases("tests", log):
            ensure_materialized(dataset, sandbox, trained + held_out)
        policies = {"sft": Path(config.train.init_from)}
        for run in RUNS:
            with phases(f"train_{run}", log):
                run_out = train(run_config(config, run), sandbox=sandbox, log=log)
                policies[run] = export_pretrained(run_out, run_out / "hf")
        programs: dict[str, tuple[dict, dict]] = {}
        held_programs: dict[str, tuple[dict, dict]] = {}
        ev = config.eval
        with phases("sample", log):
            for name in POLICIES:
                model, tokenizer = load_policy(policies[name])
                sampling = {"temperature": ev.temperature, "max_new_tokens": ev.max_new_tokens,
                            "seed": ev.seed, "policy": str(policies[name])}
                chosen = sample_programs(model, tokenizer, dataset, trained, ev.samples,
                                         ev.max_new_tokens, ev.temperature, ev.seed,
                                         ev.batch_size, template=config.train.prompt)
                programs[name] = (chosen, sampling)
                if held_out:
                    rows = len(held_out) * ev.held_out_samples  # one call, no padding rows
                    held_programs[name] = (sample_programs(
                        model, tokenizer, dataset, held_out, ev.held_out_samples,
                        ev.max_new_tokens, ev.temperature, ev.seed + 1,
                        min(ev.batch_size, rows), template=config.train.prompt), sampling)
        with phases("timing", log):
            timing = {"seed": ev.seed, "cap_s": eval_env().service_cap_s,
                      "reference_runs": ev.reference_runs, "tests": config.train.data.tests,
                      "stop_after_failure": ev.stop_after_failure}
            dumps = build_dumps(dataset, trained, programs, sandbox, **timing)
            held_dumps = (build_dumps(dataset, held_out, held_programs, sandbox, **timing)
                          if held_out else {})
        with phases("replay", log):
            evals, held = {}, {}
            for name in POLICIES:
                write_dump(dumps[name], out / "eval" / f"{name}.dump.json.gz")
                evals[name] = replay(dumps[name], references="fresh",
                                     resamples=ev.resamples, seed=ev.seed)
                if held_out:
                    write_dump(held_dumps[name], out / "eval" / f"{name}.held_out.dump.json.gz")
                    held[name] = replay(held_dumps[name], references="fresh",
                                        resamples=ev.resamples, seed=ev.seed)
        training = {run: read_metrics(out / run) for run in RUNS}
        settings = _settings(config, trained, held_out, policies)
        with phases("report", log):
            paths = write_report(out, evals=evals, held_out=held or None,
                                 dumps=dumps,
                                 training=training, phases_s=dict(phases.seconds),
                                 wall_s=round(time.perf_counter() - started, 2),
                                 baseline_env=config.baseline_env, settings=settings)
    for run in RUNS:
        paths[f"{run} run (metrics, tensorboard/, checkpoints/, hf/)"] = out / run
    paths["evaluation dumps"] = out / "eval"
    return paths, json.loads(paths["report_json"].read_text())


@contextlib.contextmanager
def demo_session(config, fresh: bool, sandbox: Any = None):
    """`(out, sandbox)` for a demo: its output folder (emptied first when `fresh`) holding the
    resolved config, XLA's persistent compilation cache on, and `sandbox` when given, else an
    embedded pool sized by `config.train.sandbox`, closed on exit."""
    _persistent_compile_cache()
    out = Path(config.output_dir)
    if fresh and out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "demo_config.yaml").write_text(yaml.safe_dump(to_dict(config), sort_keys=False))
    if sandbox is not None:
        yield out, sandbox
        return
    from sandbox_cluster import connect

    options = {k: v for k, v in (("slots", config.train.sandbox.workers),
                                 ("backend", config.train.sandbox.backend)) if v is not None}
    owned = connect(None, **options)
    try:
        yield out, owned
    finally:
        owned.close()


def _persistent_compile_cache() -> None:
    """XLA executables cached on disk (JAX's persistent compilation cache): the second GRPO run
    and every later demo reuse the first run's compiled train step and sampler."""
    import jax

    if jax.config.jax_compilation_cache_dir is None:
        cache = Path.home() / ".cache" / "jaxopt-rl" / "xla"
        cache.mkdir(parents=True, exist_ok=True)
        jax.config.update("jax_compilation_cache_dir", str(cache))


def _settings(config: DemoConfig, trained, held_out, policies) -> dict[str, Any]:
    train = config.train
    return {
        "problems (trained and evaluated)": ", ".join(trained),
        "held-out problems": ", ".join(held_out) or "none",
        "tests": ", ".join(train.data.tests) or "all",
        "QP run env": config.qp_env, "baseline env": config.baseline_env,
        "GRPO steps per run": train.steps, "prompts per step": train.loop.prompts_per_step,
        "G (rollouts per prompt)": train.rollout.group_size,
        "learning rate": train.optimizer.learning_rate, "seed": train.seed,
        "rollout temperature (training)": train.rollout.temperature,
        "sampling temperature (evaluation)": config.eval.temperature,
        "max new tokens": train.rollout.max_new_tokens,
        "loop mode": train.loop.mode,
        "stop a run at its first correctness failure": train.rollout.stop_after_failure,
        "reference leaderboard": f"{train.rollout.references} "
                                 f"({train.rollout.reference_runs} runs)",
        "SFT start": str(policies["sft"]),
        "eval samples per problem": config.eval.samples,
        "eval reference runs": config.eval.reference_runs,
        "resolved config": "demo_config.yaml",
    }
