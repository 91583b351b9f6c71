"""Generate, execute once, dump: the live half of a replayed evaluation (spec dataset-eval.md
§5.5 steps 1-3). `jaxopt_rl.evaluation.replay` is the offline half.

    model, tokenizer = load_policy("runs/hf_folder")           # the one policy loader
    programs = sample_programs(model, tokenizer, dataset, problem_ids, n=20)
    dump = build_dump(dataset, problem_ids, programs, sandbox, model_name="...")

`build_dump` runs ONE timing pass (`timing_pass.run_jobs`) over every candidate program and
every stored reference solution of every problem, in one shuffled order, and records the raw
statuses and durations, the stored reference durations, the executed order and the sandbox
state (format: `jaxopt_rl.evaluation.dump`).

`load_policy(path)` reads a Hugging Face folder (`save_pretrained` output, with or without its
own tokenizer files; without them the project's default tokenizer is used). It is the single
entry point for policies so that trainer checkpoints can be added in one place.
"""

from __future__ import annotations

import fnmatch
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.evaluation.dump import FORMAT, VERSION, dataset_info
from jaxopt_rl.evaluation.timing_pass import Job, run_jobs, sandbox_state
from sandbox_cluster.api import Limits, TestCase

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
        tokenizer = (Tokenizer.from_folder(folder) if (folder / "tokenizer.json").is_file()
                     else Tokenizer.default())
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
                    batch_size: int = 16, template=None) -> dict[str, list[str | None]]:
    """n completions per problem with the group sampler (one prefill per problem, stopped rows
    not decoded), ``max(1, batch_size // n)`` whole problems per call; the extracted programs
    (None where a completion holds no closed Python block).

    Sample ``g`` of the ``i``-th problem is row ``i * n + g`` of the draws (seeded per call by
    ``seed`` plus the call's first row), so with `batch_size` a multiple of `n` they are the
    static sampler's on the problems' prompts repeated `n` times in chunks of `batch_size`."""
    from rich.progress import Progress

    from jaxopt_rl.model.prompt import PromptTemplate, extract_program, problem_prompt
    from jaxopt_rl.sampling.host import generate_groups

    template = template or PromptTemplate()
    prompt_ids = {pid: tokenizer.encode(problem_prompt(dataset.record(pid), template))
                  for pid in problem_ids}
    programs: dict[str, list[str | None]] = {}
    per_call = max(1, batch_size // n)
    with Progress() as progress:
        task = progress.add_task("sampling", total=len(problem_ids) * n)
        for first in range(0, len(problem_ids), per_call):
            chunk = list(problem_ids[first:first + per_call])
            # a short last chunk is filled with copies (discarded), so every call has one shape
            # and the sampler compiles once
            prompts = [prompt_ids[pid] for pid in chunk]
            prompts += prompts[-1:] * (per_call - len(chunk))
            batch = generate_groups(model, prompts, n, max_new_tokens, temperature,
                                    stop_tokens=tokenizer.eos_ids, seed=seed + first * n,
                                    pad_id=tokenizer.pad_id)
            texts = tokenizer.decode_batch(batch.completions()[:len(chunk) * n])
            for i, pid in enumerate(chunk):
                programs[pid] = [extract_program(text) for text in texts[i * n:(i + 1) * n]]
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


def _tests(dataset, pid: str, sandbox) -> tuple:
    try:
        return dataset.tests(pid)
    except FileNotFoundError:  # recipe tests: regenerate them in the sandbox once, then cache
        from jaxopt_rl.data.materialize import materialize

        errors = materialize(dataset, sandbox, [pid])
        if errors:
            raise ValueError(f"problem {pid!r}: cannot materialise its tests: {errors[pid]}"
                             ) from None
        dataset.tests.cache_clear()
        return dataset.tests(pid)


def problem_layout(dataset, pid: str, sandbox, cap_s: float,
                   kinds: Sequence[str] | None = None,
                   max_references: int | None = None,
                   tests: Sequence[str] = ()) -> dict[str, Any]:
    """Tests, stored references and run settings of one problem, in the data set's test order.

    `kinds` keeps only tests of those kinds (a calibration campaign times TO tests only);
    `tests` only tests whose id matches one of these fnmatch patterns (as training's
    `data.tests`);
    `max_references` keeps that many stored references, spread evenly over their order by
    total stored duration (fastest and slowest included)."""
    record = dataset.record(pid)
    patterns = tuple(tests)
    tests = _tests(dataset, pid, sandbox)
    refs = dataset.reference_times(pid)
    if tuple(t.test_id for t in tests) != refs.test_ids:
        raise ValueError(f"problem {pid!r}: tests and stored durations disagree on the test order")
    rows = [t for t, test in enumerate(tests) if (kinds is None or test.kind in kinds)
            and (not patterns or any(fnmatch.fnmatchcase(test.test_id, p) for p in patterns))]
    if not rows:
        raise ValueError(f"problem {pid!r} has no test of kind {', '.join(kinds or ('any',))}"
                         + (f" matching {list(patterns)}" if patterns else ""))
    code = {s.solution_id: s.code for s in dataset.solutions(pid)}
    ref_ids = [h for h in refs.solution_ids if h in code]
    if max_references is not None and len(ref_ids) > max_references:
        totals = {h: float(np.sum(np.where(refs.mask_TH[:, refs.solution_ids.index(h)],
                                           refs.duration_TH[:, refs.solution_ids.index(h)], 0)))
                  for h in ref_ids}
        ranked = sorted(ref_ids, key=lambda h: (totals[h], h))
        picks = np.unique(np.round(np.linspace(0, len(ranked) - 1, max_references)).astype(int))
        ref_ids = [h for h in ref_ids if h in {ranked[i] for i in picks}]
    columns = [refs.solution_ids.index(h) for h in ref_ids]
    tests = [tests[t] for t in rows]
    return {
        "record": record,
        "cases": tuple(TestCase(t.input, t.expected) for t in tests),
        "kinds": tuple(t.kind for t in tests),
        "limits": Limits(time_s=cap_s, memory_mb=record.memory_mb),
        "tests": {"ids": [t.test_id for t in tests], "kinds": [t.kind for t in tests],
                  "limit_s": [cap_s] * len(tests),
                  "io_chars": refs.io_chars_T[rows].tolist()},
        "stored_references": {
            "ids": ref_ids,
            "duration_s": refs.duration_TH[np.ix_(rows, columns)].astype(float).tolist(),
            "usable": refs.mask_TH[np.ix_(rows, columns)].tolist(),
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
    fresh runs, so their scores are comparable (spec dataset-eval.md §5.5).

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
    layouts = {}
    for pid in ids:
        layouts[pid] = problem_layout(dataset, pid, sandbox, cap_s, kinds, max_references, tests)
        if on_layout is not None:
            on_layout(pid)
    names = list(models)
    jobs: list[Job] = []
    for p, pid in enumerate(ids):
        lay, record = layouts[pid], layouts[pid]["record"]
        common = {"tests": lay["cases"], "limits": lay["limits"], "kinds": lay["kinds"],
                  "interface": record.interface, "float_tolerance": record.float_tolerance}
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
            problems.append({"problem_id": pid, "difficulty": lay["record"].difficulty,
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
