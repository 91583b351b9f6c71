"""`jaxopt-rl data`: build, inspect and materialise DMC-Optim datasets.

    jaxopt-rl data build configs/data/mini.yaml [key=value ...]   # resumable: rerun to continue
    jaxopt-rl data stats [DATASET] [--out DIR]                     # default: the mini benchmark
    jaxopt-rl data materialize DATASET [--urls URL,...]            # rebuild recipe tests

DATASET is 'mini' or a built data set folder (`jaxopt_rl.data.lookup`).
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

HELP = "Build, inspect and materialise DMC-Optim datasets (build / stats / materialize)."


def add_arguments(parser) -> None:
    sub = parser.add_subparsers(dest="data_command", metavar="ACTION", required=True)
    build = sub.add_parser("build", help="run (or resume) the staged dataset build")
    build.add_argument("config", help="build config YAML (e.g. configs/data/mini.yaml)")
    build.add_argument("overrides", nargs="*", help="key=value config overrides")
    build.add_argument("--no-progress", action="store_true", help="no progress bars")
    stats = sub.add_parser("stats", help="funnel, splits, filterability, timing, histograms")
    stats.add_argument("dataset", nargs="?", default=None,
                       help="'mini' (default) or a built dataset folder")
    stats.add_argument("--out", default=None, help="where to write stats.json and PNGs "
                       "(default: runs/data/stats/<dataset name>)")
    stats.add_argument("--json", action="store_true", help="print the JSON instead of tables")
    mat = sub.add_parser("materialize", help="regenerate recipe tests in the sandbox")
    mat.add_argument("dataset", help="'mini' or a built dataset folder")
    mat.add_argument("--urls", default="", help="sandbox fleet URLs (default: embedded pool)")
    mat.add_argument("--cache-dir", default=None)


def run(args) -> int:
    return {"build": _build, "stats": _stats, "materialize": _materialize}[args.data_command](args)


class _RichProgress:
    """One bar per stage plus an overall bar; thread-safe (`rich` locks internally)."""

    def __init__(self, stages, total: int):
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

        self.progress = Progress("[progress.description]{task.description}", BarColumn(),
                                 MofNCompleteColumn(), TimeElapsedColumn())
        self.tasks = {s.name: self.progress.add_task(s.name, total=total) for s in stages}
        self.overall = self.progress.add_task("[bold]problems finished", total=total)
        self.lock = threading.Lock()
        self.progress.start()

    def advance(self, stage_name: str) -> None:
        with self.lock:
            self.progress.advance(self.tasks[stage_name])

    def done(self) -> None:
        with self.lock:
            self.progress.advance(self.overall)

    def stop(self) -> None:
        self.progress.stop()


def _console():
    from rich.console import Console

    # Piped output (CI logs, `| tee`) would otherwise wrap the tables at 80 columns.
    console = Console()
    return console if console.is_terminal else Console(width=160)


def _build(args) -> int:
    from rich.table import Table

    from jaxopt_rl.config import load_config
    from jaxopt_rl.data.builder import BuildConfig, build

    config = load_config(BuildConfig, args.config, args.overrides)
    bars: list[_RichProgress] = []

    def factory(stages, total):
        bars.append(_RichProgress(stages, total))
        return bars[-1]

    try:
        report = build(config, progress_factory=None if args.no_progress else factory)
    finally:
        for bar in bars:
            bar.stop()
    console = _console()
    table = Table(title=f"build funnel ({report.seconds:.0f} s) -> {report.output_dir}")
    for column in ("stage", "operation", "problems", "correct sols", "incorrect sols"):
        table.add_column(column, justify="right" if "sols" in column or column == "problems" else "left")
    for row in report.funnel:
        table.add_row(row.stage, row.operation, str(row.problems), str(row.correct), str(row.incorrect))
    console.print(table)
    if report.rejections:
        rejected = Table(title="problems not kept (also in rejections.jsonl)")
        for column in ("problem", "stage", "outcome", "reason"):
            rejected.add_column(column, overflow="fold")
        for r in report.rejections:
            rejected.add_row(r["problem_id"], r["stage"], r["outcome"], r["reason"])
        console.print(rejected)
    if report.incomplete:
        console.print(f"[bold yellow]{len(report.incomplete)} problem(s) pending or failed "
                      "unexpectedly; rerun the same command to resume them.")
        return 3
    return 0


def _stats(args) -> int:
    from rich.table import Table

    from jaxopt_rl.data.lookup import find_data_set
    from jaxopt_rl.data.stats import dataset_stats, plot_duration_histograms, plot_filterability

    dataset = find_data_set(args.dataset or "mini")
    stats = dataset_stats(dataset)
    out = Path(args.out or Path("runs/data/stats") / (stats["name"] or dataset.root.name))
    out.mkdir(parents=True, exist_ok=True)
    (out / "stats.json").write_text(json.dumps(stats, indent=1) + "\n")
    histogram = plot_duration_histograms(dataset, out / "durations_by_kind.png")
    cv_plot = plot_filterability(dataset, out / "filterability.png")
    if args.json:
        json.dump(stats, sys.stdout, indent=1)
        print()
        return 0
    console = _console()
    funnel = Table(title=f"{stats['name']}: funnel")
    for column in ("stage", "operation", "problems", "correct", "incorrect"):
        funnel.add_column(column)
    for row in stats["funnel"]:
        funnel.add_row(*(str(row[c]) for c in ("stage", "operation", "problems", "correct", "incorrect")))
    console.print(funnel)
    console.print(f"splits: {stats['splits']}  duration-filterable: {stats['duration_filterable']}")
    shares = ", ".join(f"{kind} {v['share_filterable']:.0%} of {v['problems_with_cv']}"
                       for kind, v in stats["filterability_by_kind"].items()
                       if v["share_filterable"] is not None)
    console.print(f"share of problems with robust CV >= threshold, by test kind: {shares}")
    aug = stats["augmentation"]
    if aug:
        console.print(
            f"augmentation (correctness round, mean over {aug['problems']} problems): "
            f"false-positive rate T0 {aug['false_positive_t0']:.1%} -> raw "
            f"{aug['false_positive_raw']:.1%} -> filtered {aug['false_positive_filtered']:.1%}; "
            f"correct pass rate raw {aug['correct_pass_raw']:.1%} -> filtered "
            f"{aug['correct_pass_filtered']:.1%}")
    timing = Table(title="pooled reference durations (Table 21 analogue)")
    columns = ("kind", "durations", "mean_s", "median_s", "p90_s", "p95_s", "p99_s",
               "share_over_1s", "problems_10pct_over_1s")
    for column in columns:
        timing.add_column(column)
    for row in stats["timing"]:
        timing.add_row(*(f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c]) for c in columns))
    console.print(timing)
    per_problem = Table(title="per-problem filterability (robust CV = IQR/median of per-test mean)")
    for column in ("problem", "split", "T0 cv", "T+ cv", "TO cv", "TO length r", "filterable"):
        per_problem.add_column(column)

    def fmt(value):
        return "-" if value is None else f"{value:.2f}"

    for row in stats["problems"]:
        cv = row["robust_cv"]
        per_problem.add_row(row["problem_id"], str(row["split"]), fmt(cv.get("T0")),
                            fmt(cv.get("T+")), fmt(cv.get("TO")), fmt(row["length_r"].get("TO")),
                            "yes" if row["duration_filterable"] else "no")
    console.print(per_problem)
    console.print(f"wrote {out / 'stats.json'}, {histogram}, {cv_plot}")
    return 0


def _materialize(args) -> int:
    from rich.progress import track

    from jaxopt_rl.data.lookup import find_data_set
    from jaxopt_rl.data.materialize import materialize
    from sandbox_cluster import connect

    dataset = find_data_set(args.dataset, args.cache_dir)
    urls = [u for u in args.urls.split(",") if u.strip()]
    sandbox = connect(urls or None)
    ids = dataset.problem_ids()
    try:
        errors = {}
        for problem_id in track(ids, description="materialising"):
            errors.update(materialize(dataset, sandbox, [problem_id]))
    finally:
        sandbox.close()
    for problem_id, error in errors.items():
        print(f"{problem_id}: {error}", file=sys.stderr)
    print(f"materialised {len(ids) - len(errors)}/{len(ids)} problems into {dataset.cache_dir}")
    return 1 if errors else 0
