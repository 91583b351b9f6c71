"""Generate, execute once, dump: the live half of a replayed evaluation (docs/design/dataset-eval.md
§5.5 steps 1-3). `jaxopt_rl.evaluation.replay` is the offline half.

    model, tokenizer = load_policy("runs/hf_folder")           # the one policy loader
    programs = sample_programs(model, tokenizer, dataset, problem_ids, n=20)
    dump = build_dump(dataset, problem_ids, programs, sandbox, model_name="...")

Sampling and the problem view are the rollouts': `sample_programs` draws through the rollout
worker's sample phase (`rollouts.worker.sample_call`) on the problem bank's prompts, and
`problem_layout` reads a problem's tests, kinds, limits, io sizes and stored reference
durations from its `rollouts.problems.ProblemRun`. What only evaluation needs is added here:
which references run (those with stored code, at most `max_references`), a `kinds` filter, and
the dump's layout.

`build_dump` runs ONE timing pass (`rollouts.timing_pass.run_jobs`) over every candidate program and
every chosen reference of every problem, in one shuffled order, and records the raw statuses
and durations, the stored reference durations, the executed order and the sandbox state
(format: `jaxopt_rl.evaluation.dump`). The references' fresh runs are kept raw, run by run,
for the replay to read; `ProblemBank.retime_references` (training's `rollout.references:
fresh`) is another operation: it times the references alone, before training, and keeps only
the mean of each reference's rankable runs as the durations the rewards rank against.

`load_policy(path)` reads a Hugging Face folder (`save_pretrained` output) and the tokenizer
that checkpoint uses (`Tokenizer.for_checkpoint`: its own files, else the project's). It is the
single entry point for policies so that trainer checkpoints can be added in one place.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.evaluation.dump import FORMAT, VERSION, dataset_info
from jaxopt_rl.rollouts.timing_pass import Job, run_jobs, sandbox_state

DEFAULT_CAP_S = 10.0
REFERENCE_MODEL = "@references"  # `eval --model @references`: the references as candidates


class PolicyError(ValueError):
    """A policy path that is not a loadable checkpoint."""


def load_policy(path: str | Path, dtype: str = "float32"):
    """`(model, tokenizer)` from a Hugging Face folder (see the module docstring)."""
    from jaxopt_rl.model.checkpoint import CheckpointError, load_pretrained
    from jaxopt_rl.model.tokenizer import Tokenizer, TokenizerError

    folder = Path(path)
    if not (folder / "config.json").is_file():
        raise PolicyError(f"unknown checkpoint {folder}: expected a Hugging Face folder with "
                          "config.json and safetensors (save_pretrained output)")
    try:
        model = load_pretrained(folder, dtype=dtype)
        tokenizer = Tokenizer.for_checkpoint(folder)
    except (CheckpointError, TokenizerError) as err:
        raise PolicyError(f"checkpoint {folder}: {err}") from None
    if tokenizer.vocab_size > model.config.vocab_size:
        raise PolicyError(f"checkpoint {folder}: tokenizer has {tokenizer.vocab_size} tokens, "
                          f"the model's vocabulary only {model.config.vocab_size}")
    return model, tokenizer


def check_problems(dataset, problem_ids: Sequence[str] | None, split: str | None = None
                   ) -> list[str]:
    """The problem list to evaluate, refused with one line when empty or unknown."""
    ids = list(problem_ids) if problem_ids is not None else dataset.problem_ids(split)
    if not ids:
        raise ValueError(f"empty problem list (data set {dataset.root}, split {split})")
    unknown = [p for p in ids if p not in dataset.problems]
    if unknown:
        raise ValueError(f"problem {unknown[0]!r} is not in data set {dataset.root}")
    return ids


def sample_programs(model, tokenizer, dataset, problem_ids: Sequence[str], n: int,
                    max_new_tokens: int = 512, temperature: float = 1.0, seed: int = 0,
                    batch_size: int = 16, template=None, prompts: dict[str, str] | None = None
                    ) -> dict[str, list[str | None]]:
    """n completions per problem through the rollout worker's sample phase
    (`rollouts.worker.sample_call`: the group sampler, one prefill per problem, stopped rows
    not decoded), ``max(1, batch_size // n)`` whole problems per call; the extracted programs
    (None where a completion holds no closed Python block). Prompts are the problem bank's
    (`rollouts.problems.ProblemBank.prompt`, under `template`).

    Sample ``g`` of the ``i``-th problem is row ``i * n + g`` of the draws (seeded per call by
    ``seed`` plus the call's first row), so with `batch_size` a multiple of `n` they are the
    static sampler's on the problems' prompts repeated `n` times in chunks of `batch_size`.
    `prompts` (problem id -> prompt text) stands in for the data set's (score tasks: `dataset`
    may then be None)."""
    from rich.progress import Progress

    from jaxopt_rl.rollouts.config import RolloutConfig
    from jaxopt_rl.rollouts.problems import ProblemBank
    from jaxopt_rl.rollouts.worker import sample_call

    if prompts is None:
        bank = ProblemBank(dataset, DEFAULT_CAP_S, template)  # for its prompts: no cap applies
        prompts = {pid: bank.prompt(pid) for pid in problem_ids}
    per_call = max(1, batch_size // n)
    # The sampler's knobs. G is passed on its own (n may be 1, a training group never is), and
    # prompts are padded to multiples of 16 as evaluation's sampler always did, so a seed draws
    # the completions it drew before the rollout worker sampled for evaluation.
    config = RolloutConfig(max_new_tokens=max_new_tokens, temperature=temperature,
                           prompts_per_call=per_call, prompt_multiple=16)
    programs: dict[str, list[str | None]] = {}
    with Progress() as progress:
        task = progress.add_task("sampling", total=len(problem_ids) * n)
        for first in range(0, len(problem_ids), per_call):
            chunk = list(problem_ids[first:first + per_call])
            # a short last chunk is filled with copies (discarded), so every call has one shape
            # and the sampler compiles once
            texts = [prompts[pid] for pid in chunk]
            texts += texts[-1:] * (per_call - len(chunk))
            draws = sample_call(model, tokenizer, texts, n, config, seed + first * n)
            for i, pid in enumerate(chunk):
                programs[pid] = list(draws.programs[i])
            progress.advance(task, len(chunk) * n)
    return programs


def reference_programs(dataset, problem_ids: Sequence[str], n: int,
                       include_incorrect: bool = True) -> dict[str, list[str | None]]:
    """n candidates per problem taken from the data set's own solutions (correct ones, then
    incorrect ones, cycled): a dump whose pass rates are known to be non-trivial."""
    out = {}
    for pid in problem_ids:
        solutions = [s for s in dataset.solutions(pid) if s.verified_correct]
        if include_incorrect:
            solutions += [s for s in dataset.solutions(pid) if not s.verified_correct]
        if not solutions:
            raise ValueError(f"problem {pid!r} has no stored solution to use as a candidate")
        out[pid] = [solutions[g % len(solutions)].code for g in range(n)]
    return out


def _problem_run(bank, pid: str, sandbox):
    """The bank's `ProblemRun` of `pid`; recipe tests are regenerated in the sandbox once and
    cached first where the data set stores only their recipes."""
    from jaxopt_rl.data.materialize import ensure_materialized

    ensure_materialized(bank.dataset, sandbox, [pid])
    return bank[pid]


def problem_layout(bank, pid: str, sandbox, kinds: Sequence[str] | None = None,
                   max_references: int | None = None) -> dict[str, Any]:
    """What a dump and its timing pass need of one problem, from the rollouts' problem view
    (`rollouts.problems.ProblemBank`: tests as the sandbox takes them, kinds, io sizes, limits
    under the bank's cap, stored reference durations, all on the tests the bank keeps, in the
    data set's order), plus what only evaluation needs:

    `kinds` keeps only tests of those kinds (a calibration campaign times TO tests only);
    the references are those with a usable stored duration on the bank's tests and code in
    the data set, and `max_references` keeps that many, spread evenly over their order by
    total stored duration on the bank's tests (fastest and slowest included); their code runs
    in the timing pass.

    The stored table is written as the data set stores it: usable durations (success or
    timeout) as float32 seconds, 0 and unusable where a reference has no usable duration."""
    run = _problem_run(bank, pid, sandbox)
    rows = [t for t, kind in enumerate(run.test_kinds) if kinds is None or kind in kinds]
    if not rows:
        raise ValueError(f"problem {pid!r} has no test of kind {', '.join(kinds or ('any',))}"
                         + (f" matching {list(bank.test_patterns)}" if bank.test_patterns
                            else ""))
    code = {s.solution_id: s.code for s in bank.dataset.solutions(pid)}
    stored_ids = sorted({r.reference_id for r in run.references} & code.keys())
    column_of = {h: i for i, h in enumerate(stored_ids)}
    test_index = {spec.test_id: t for t, spec in enumerate(run.specs)}
    duration_TH = np.zeros((len(run.specs), len(stored_ids)), np.float32)
    mask_TH = np.zeros(duration_TH.shape, bool)
    for ref in run.references:
        if ref.reference_id in column_of:
            cell = test_index[ref.test_id], column_of[ref.reference_id]
            duration_TH[cell], mask_TH[cell] = ref.duration_s, True
    ref_ids = stored_ids
    if max_references is not None and len(ref_ids) > max_references:
        totals = {h: float(np.sum(np.where(mask_TH[:, column_of[h]],
                                           duration_TH[:, column_of[h]], 0))) for h in ref_ids}
        ranked = sorted(ref_ids, key=lambda h: (totals[h], h))
        picks = np.unique(np.round(np.linspace(0, len(ranked) - 1, max_references)).astype(int))
        ref_ids = [h for h in ref_ids if h in {ranked[i] for i in picks}]
    columns = [column_of[h] for h in ref_ids]
    specs = [run.specs[t] for t in rows]
    return {
        "run": run,
        "cases": tuple(run.tests[t] for t in rows),
        "kinds": tuple(run.test_kinds[t] for t in rows),
        "tests": {"ids": [s.test_id for s in specs], "kinds": [s.test_kind for s in specs],
                  "limit_s": [run.limits.time_s] * len(specs),
                  "io_chars": [s.io_chars for s in specs]},
        "stored_references": {
            "ids": ref_ids,
            "duration_s": duration_TH[np.ix_(rows, columns)].astype(float).tolist(),
            "usable": mask_TH[np.ix_(rows, columns)].tolist(),
        },
        "reference_code": [code[h] for h in ref_ids],
    }


def build_dump(dataset, problem_ids: Sequence[str], programs: dict[str, list[str | None]],
               sandbox, *, model_name: str, sampling: dict[str, Any] | None = None,
               **options: Any) -> dict[str, Any]:
    """One model's dump from its own timing pass (see `build_dumps` for the options)."""
    return build_dumps(dataset, problem_ids, {model_name: (programs, sampling or {})}, sandbox,
                       **options)[model_name]


def build_dumps(dataset, problem_ids: Sequence[str],
                models: dict[str, tuple[dict[str, list[str | None]], dict[str, Any]]],
                sandbox, *, seed: int = 0, cap_s: float = DEFAULT_CAP_S,
                reference_runs: int = 1, max_in_flight: int = 8,
                kinds: Sequence[str] | None = None, max_references: int | None = None,
                tests: Sequence[str] = (), on_layout: Callable[[str], None] | None = None,
                stop_after_failure: bool = False) -> dict[str, dict[str, Any]]:
    """ONE shared shuffled timing pass over the candidates of every model in `models`
    ({name: (programs per problem, sampling info)}) and the references; one dump per model.

    The dumps of one pass share `timing_pass.pass_id`, the executed order and the references'
    fresh runs, so their scores are comparable (docs/design/dataset-eval.md §5.5).

    `stop_after_failure` ends a candidate's run at its first failed correctness test (the
    tests it skips are `not_run`, recorded in `timing_pass`): exact for pass@k(p_tau), which a
    failed correctness test decides; a dump replayed later under a reward that still credits a
    failed program (additive, optimization-only) would see those tests as failures. The
    references always run every test."""
    ids = check_problems(dataset, problem_ids)
    if not models:
        raise ValueError("build_dumps: no model to evaluate")
    for name, (programs, _) in models.items():
        n_values = {len(programs.get(pid, [])) for pid in ids}
        if len(n_values) != 1 or 0 in n_values:
            raise ValueError(f"programs of {name}: every problem needs the same number n >= 1 "
                             f"of candidates, got {sorted(n_values)}")
    if reference_runs < 0:
        raise ValueError(f"reference_runs={reference_runs}: must be >= 0")
    from jaxopt_rl.rollouts.problems import ProblemBank

    bank = ProblemBank(dataset, cap_s, tests=tests)
    layouts = {}
    for pid in ids:
        layouts[pid] = problem_layout(bank, pid, sandbox, kinds, max_references)
        if on_layout is not None:
            on_layout(pid)
    names = list(models)
    jobs: list[Job] = []
    for p, pid in enumerate(ids):
        lay, run = layouts[pid], layouts[pid]["run"]
        common = {"tests": lay["cases"], "limits": run.limits, "kinds": lay["kinds"],
                  "interface": run.interface, "float_tolerance": run.float_tolerance}
        for m, name in enumerate(names):
            for g, program in enumerate(models[name][0][pid]):
                if program is not None:
                    jobs.append(Job(key=(p, "s", g, 0, m), program=program,
                                    stop_after_failure=stop_after_failure, **common))
        for r in range(reference_runs):
            for h, source in enumerate(lay["reference_code"]):
                jobs.append(Job(key=(p, "r", h, r, -1), program=source, **common))
    started = time.time()
    started_at = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    outcomes, order = run_jobs(sandbox, jobs, seed=seed, max_in_flight=max_in_flight)
    by_key = {job.key: outcome for job, outcome in zip(jobs, outcomes)}
    timing_pass = {"pass_id": uuid.uuid4().hex[:12], "models": names, "shuffled": True,
                   "references_included": reference_runs > 0, "reference_runs": reference_runs,
                   "seed": seed, "cap_s": cap_s,
                   "kinds": list(kinds) if kinds else ["T0", "T+", "TO"],
                   "tests": list(tests), "stop_after_failure": stop_after_failure,
                   "started_at": started_at, "order": [list(jobs[i].key) for i in order],
                   "sandbox_state": sandbox_state(sandbox, started)}
    fresh_by_problem = {}
    for p, pid in enumerate(ids):
        lay = layouts[pid]
        count = len(lay["reference_code"])
        fresh_by_problem[pid] = None if not reference_runs else {
            "ids": lay["stored_references"]["ids"], "runs": [
                {"status": [by_key[(p, "r", h, r, -1)].status for h in range(count)],
                 "duration_s": [by_key[(p, "r", h, r, -1)].duration_s for h in range(count)],
                 "timing": [by_key[(p, "r", h, r, -1)].timing for h in range(count)]}
                for r in range(reference_runs)]}
    dumps = {}
    for m, name in enumerate(names):
        programs, sampling = models[name]
        problems = []
        for p, pid in enumerate(ids):
            lay = layouts[pid]
            samples = []
            for g, program in enumerate(programs[pid]):
                outcome = by_key.get((p, "s", g, 0, m))
                samples.append({"id": f"s{g:03d}", "program": program,
                                "status": outcome.status if outcome else None,
                                "duration_s": outcome.duration_s if outcome else None,
                                "timing": outcome.timing if outcome else None})
            problems.append({"problem_id": pid, "difficulty": lay["run"].difficulty,
                             "tests": lay["tests"], "stored_references": lay["stored_references"],
                             "fresh_references": fresh_by_problem[pid], "samples": samples})
        dumps[name] = {
            "format": FORMAT, "version": VERSION, "model": name,
            "n": len(programs[ids[0]]),
            "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "dataset": dataset_info(dataset), "sampling": sampling or {},
            "timing_pass": timing_pass, "problems": problems,
        }
    return dumps
