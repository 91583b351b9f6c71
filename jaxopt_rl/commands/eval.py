"""`jaxopt-rl eval`: replayed evaluation (docs/design/dataset-eval.md §5.4-§5.7).

    jaxopt-rl eval --model HF_FOLDER|RUN_DIR [--data mini] [--n 20] [--problems ID ...] [--out DIR]
        sample n programs per problem, ONE shared shuffled timing pass over all candidates and
        the references on the sandbox, write dump.json.gz, then replay it (below).
        `--model @references` uses the data set's own solutions as candidates.
    jaxopt-rl eval replay DUMP [calibration.name=NAME | calibration.kind=affine ...]
                               [--refit] [--references stored|fresh] [--against DUMP] [--out DIR]
        re-score a dump offline: eval.json, eval_details.json, report.md, p_tau.png,
        calibration_sweep.png. No sandbox is contacted.
    jaxopt-rl eval compare DUMP DUMP ... [key=value ...] [--out DIR]
        several dumps of one data set side by side: compare.md and compare_p_tau.png.

`key=value` words override the evaluation environment (any `EnvConfig` key, e.g.
`calibration.name=mini-v1 ranking.ties=average`), with --model as well
(`jaxopt_rl.commands.split_overrides` tells them from dump paths).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from jaxopt_rl.commands import split_overrides

HELP = "Replayed evaluation: sample + one shared timing pass (eval), replay, compare."
ACTIONS = ("replay", "compare")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="*",
                        metavar="[replay DUMP | compare DUMP DUMP ...] [key=value ...]",
                        help="replay one dump or compare several (without an action: evaluate "
                        "--model); key=value words override the evaluation env (e.g. "
                        "calibration.name=mini-v1 ranking.ties=average)")
    parser.add_argument("--model", nargs="+", default=None,
                        help="Hugging Face folder(s) (save_pretrained), trainer run folders or "
                        "checkpoints (exported first), or @references; several models share ONE "
                        "timing pass and are compared")
    parser.add_argument("--data", default=None,
                        help="'mini' (default) or a built dataset folder; with replay/compare: "
                        "check that the dumps come from this data set")
    parser.add_argument("--split", default=None, help="problems of this split (default: all)")
    parser.add_argument("--problems", nargs="*", default=None, help="problem ids")
    parser.add_argument("--n", type=int, default=20, help="samples per problem")
    parser.add_argument("--max-new-tokens", type=int, default=512)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--batch-size", type=int, default=16, help="prompts per sampler call")
    parser.add_argument("--cap", type=float, default=10.0, help="sandbox cap per test (s)")
    parser.add_argument("--reference-runs", type=int, default=1,
                        help="executions of every reference in the timing pass")
    parser.add_argument("--max-references", type=int, default=None,
                        help="at most this many references per problem")
    parser.add_argument("--urls", default="", help="sandbox fleet URLs (default: embedded pool)")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="materialised recipe tests (default: runs/cache/<data set>)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--refit", action="store_true",
                        help="fit the affine calibration on the dump's re-executed references")
    parser.add_argument("--references", default="stored", choices=("stored", "fresh"),
                        help="rank against stored (calibrated) or re-executed reference durations")
    parser.add_argument("--against", type=Path, default=None,
                        help="baseline dump for the speed win rates WR_b / WR_m")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--no-sweep", action="store_true", help="skip the calibration sweep")
    parser.add_argument("--out", type=Path, default=None, help="output folder")
    parser.set_defaults(overrides=[])


def run(args: argparse.Namespace) -> int:
    args.action, overrides = split_overrides(args.action)
    args.overrides = overrides + args.overrides  # those after an option come from jaxopt_rl.cli
    if args.action and args.action[0] not in ACTIONS:
        raise ValueError(f"eval: unknown action {args.action[0]!r} (expected replay or compare, "
                         "or no action with --model)")
    if args.action and args.action[0] == "replay":
        if len(args.action) != 2:
            raise ValueError("eval replay: give exactly one dump")
        return _replay(Path(args.action[1]), args, args.out or Path("runs/eval_replay"))
    if args.action:
        if len(args.action) < 3:
            raise ValueError("eval compare: give at least two dumps")
        return _compare([Path(p) for p in args.action[1:]], args)
    return _evaluate(args)


def policy_folder(spec: str, out: Path) -> Path:
    """A Hugging Face folder for `--model SPEC`: the folder itself, or, for a trainer run folder /
    its checkpoints/ / one step folder, the checkpoint exported to OUT/policies/ (parameters from
    Orbax, the tokenizer files of the run's `init_from`: `model.tokenizer.copy_tokenizer`)."""
    path = Path(spec)
    if (path / "config.json").is_file():
        return path
    from jaxopt_rl.training.checkpoints import export_pretrained, resolve_checkpoint

    try:
        run_dir, step = resolve_checkpoint(path)
    except FileNotFoundError:
        return path  # load_policy names what is missing
    from jaxopt_rl.config import load_yaml
    from jaxopt_rl.model.tokenizer import copy_tokenizer

    saved = run_dir / "config.yaml"  # the project's parser: no YAML aliases (their expansion)
    init_from = load_yaml(saved).get("init_from") if saved.is_file() else None
    name = "_".join(p for p in path.absolute().parts[-3:] if p not in ("/",))
    folder = out / "policies" / name
    export_pretrained(path, folder, step)
    copy_tokenizer(init_from, folder)
    return folder


def _console():
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # piped or captured: do not squeeze the tables to 80 columns
        console.width = max(console.width, 140)
    return console


def _replay(path: Path, args, out: Path, dump=None) -> int:
    from jaxopt_rl.evaluation import replay as rp
    from jaxopt_rl.evaluation import report
    from jaxopt_rl.evaluation.dump import read_dump

    console = _console()
    dump = dump if dump is not None else read_dump(path)
    if args.data is not None:
        _check_data(dump, path, args)
    env = rp.eval_env(args.overrides)
    against = read_dump(args.against) if args.against else None
    with console.status("replaying the dump"):
        result = rp.replay(dump, env, references=args.references, refit=args.refit,
                           resamples=args.resamples, seed=args.seed, against=against)
        sweep = None
        if not args.no_sweep and args.references == "stored":
            cal = result["details"]["calibration"]
            sweep = rp.calibration_sweep(dump, env, base=(cal["alpha"], cal["beta_s"]))
    paths = report.write_outputs(result, out, sweep)
    print(report.markdown_report(result, sweep))
    console.print(f"wrote {', '.join(str(p) for p in paths.values())}")
    return 0


def _compare(paths: list[Path], args) -> int:
    from jaxopt_rl.evaluation import replay as rp
    from jaxopt_rl.evaluation import report
    from jaxopt_rl.evaluation.dump import check_comparable, read_dump

    dumps = [read_dump(p) for p in paths]
    labels = [str(p) for p in paths]
    check_comparable(dumps, labels)
    if args.data is not None:
        _check_data(dumps[0], paths[0], args)
    env = rp.eval_env(args.overrides)
    results = [rp.replay(d, env, references=args.references, refit=args.refit,
                         resamples=args.resamples, seed=args.seed) for d in dumps]
    labels = [f"{d['model']} ({Path(p).name})" for d, p in zip(dumps, paths)]
    out = args.out or Path("runs/eval_compare")
    out.mkdir(parents=True, exist_ok=True)
    table = report.compare_markdown(results, labels)
    passes = {d["timing_pass"].get("pass_id") for d in dumps}
    table += ("\nAll runs were timed in ONE shared timing pass.\n" if len(passes) == 1
              and None not in passes else "\nThe runs come from SEPARATE timing passes: absolute "
              "strict scores are comparable only within one pass "
              "(docs/design/dataset-eval.md §5.5).\n")
    if len(dumps) == 2:
        wr = rp.compare_speed(dumps[0], dumps[1], env)
        table += (f"\nSpeed win rates of {labels[0]} against {labels[1]} ({wr['problems']} "
                  f"problems): WR_b {_percent(wr['WR_b']['win_rate'])} %, "
                  f"WR_m {_percent(wr['WR_m']['win_rate'])} %\n")
    (out / "compare.md").write_text(table)
    report.plot_p_tau({label: r["eval"]["pass_at"] for label, r in zip(labels, results)},
                      out / "compare_p_tau.png")
    print(table)
    print(f"wrote {out / 'compare.md'}, {out / 'compare_p_tau.png'}")
    return 0


def _percent(rate: float | None) -> str:
    return "—" if rate is None else f"{100 * rate:.1f}"


def _data_set(args):
    """`--data` (default mini), recipe tests under `--cache-dir` or runs/cache/."""
    from jaxopt_rl.data.lookup import command_cache_dir, find_data_set

    name = args.data or "mini"
    return find_data_set(name, args.cache_dir or command_cache_dir(name))


def _check_data(dump, path, args) -> None:
    from jaxopt_rl.evaluation.dump import DumpError, dataset_fingerprint

    dataset = _data_set(args)
    if dataset_fingerprint(dataset) != dump["dataset"]["fingerprint"]:
        raise DumpError(f"{path}: dump from another data set ({dump['dataset'].get('name')}, "
                        f"fingerprint {dump['dataset']['fingerprint']}) than --data {args.data} "
                        f"(fingerprint {dataset_fingerprint(dataset)})")


def _evaluate(args) -> int:
    from jaxopt_rl.evaluation import evaluate as ev
    from jaxopt_rl.evaluation.dump import write_dump
    from sandbox_cluster import connect

    if not args.model:
        raise ValueError("eval: give --model HF_FOLDER (or @references), or an action "
                         "(replay DUMP, compare DUMP DUMP ...)")
    if args.n < 1:
        raise ValueError(f"--n {args.n}: must be >= 1")
    dataset = _data_set(args)
    problem_ids = ev.check_problems(dataset, args.problems, args.split)
    out = args.out or Path("runs/eval")
    console = _console()
    urls = [u for u in args.urls.split(",") if u.strip()]
    sandbox = connect(urls or None)  # first: a fleet that is down is named before any sampling
    try:
        models = {}
        for spec in args.model:
            if spec in models:
                raise ValueError(f"--model {spec} given twice")
            if spec == ev.REFERENCE_MODEL:
                programs = ev.reference_programs(dataset, problem_ids, args.n)
                sampling = {"source": "data set solutions (correct, then incorrect, cycled)"}
            else:
                model, tokenizer = ev.load_policy(policy_folder(spec, out))
                sampling = {"temperature": args.temperature,
                            "max_new_tokens": args.max_new_tokens, "seed": args.seed,
                            "batch_size": args.batch_size}
                programs = ev.sample_programs(model, tokenizer, dataset, problem_ids, args.n,
                                              args.max_new_tokens, args.temperature, args.seed,
                                              args.batch_size)
            extracted = sum(p is not None for ps in programs.values() for p in ps)
            console.print(f"{spec}: {extracted}/{args.n * len(problem_ids)} completions hold "
                          "a program")
            models[spec] = (programs, sampling)
        dumps = ev.build_dumps(dataset, problem_ids, models, sandbox, seed=args.seed,
                               cap_s=args.cap, reference_runs=args.reference_runs,
                               max_references=args.max_references,
                               on_layout=lambda pid: console.print(f"prepared {pid}"))
    finally:
        sandbox.close()
    paths = []
    for spec, dump in dumps.items():
        folder = out if len(dumps) == 1 else out / _label(spec)
        path = write_dump(dump, folder / "dump.json.gz")
        console.print(f"wrote {path}")
        _replay(path, args, folder, dump=dump)
        paths.append(path)
    if len(paths) > 1:
        args.out = out / "compare"
        _compare(paths, args)
    print(f"replay under another calibration: jaxopt-rl eval replay {paths[0]} "
          "calibration.name=NAME (or --refit)", file=sys.stderr)
    return 0


def _label(spec: str) -> str:
    name = "references" if spec.startswith("@") else Path(spec).name or "model"
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)
