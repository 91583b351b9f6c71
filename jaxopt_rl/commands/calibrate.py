"""`jaxopt-rl calibrate`: fit the stored -> fresh timing calibration Gamma on the sandbox
(docs/design/sandbox-timing.md §3; `jaxopt_rl.evaluation.calibration`).

    jaxopt-rl calibrate [--data mini] [--problems ID ... | --sample K] [--reruns R]
                        [--name NAME] [--out DIR]
        rerun every reference of the problems R times on their optimization tests in one
        shuffled pass (no local fallback), pool fresh means, fit multiplicative / affine /
        quadratic with leave-one-problem-out CV, report R^2, RMSE and the ranking Spearman
        before/after, and store Gamma as configs/calibration/NAME.yaml, which
        the override `calibration.name=NAME` loads (jaxopt-rl rewards, jaxopt-rl eval replay).
    jaxopt-rl calibrate --from-dump DIR/campaign.json.gz [--name NAME]
        refit a stored campaign without the sandbox.
    jaxopt-rl calibrate drift --name NAME --problems ID ... [--reruns 1]
        the canary drift check: rerun those references, compare with Gamma(stored).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

HELP = "Fit, store and check the timing calibration (stored -> fresh reference durations)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", choices=("fit", "drift"), default="fit",
                        help="fit (default) or drift (canary check of a stored fit)")
    parser.add_argument("--data", default="mini", help="'mini' or a built dataset folder")
    parser.add_argument("--problems", nargs="*", default=None, help="problem ids")
    parser.add_argument("--sample", type=int, default=None,
                        help="a random sample of this many problems (default: all)")
    parser.add_argument("--reruns", type=int, default=3, help="reruns R of every reference")
    parser.add_argument("--max-references", type=int, default=None,
                        help="at most this many references per problem")
    parser.add_argument("--cap", type=float, default=10.0, help="sandbox cap per test (s)")
    parser.add_argument("--name", default=None, help="store Gamma under this name")
    parser.add_argument("--family", default="affine", choices=("affine", "multiplicative"),
                        help="which fit --name stores (default affine, the paper's choice)")
    parser.add_argument("--calibration-dir", type=Path, default=None,
                        help="where named fits live (default: configs/calibration)")
    parser.add_argument("--from-dump", type=Path, default=None, help="refit a campaign dump")
    parser.add_argument("--urls", default="", help="sandbox fleet URLs (default: embedded pool)")
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path("runs/calibration"))


def run(args: argparse.Namespace) -> int:
    if args.action == "drift":
        return _drift(args)
    from jaxopt_rl.evaluation import calibration as cal
    from jaxopt_rl.evaluation.dump import read_dump, write_dump

    args.out.mkdir(parents=True, exist_ok=True)
    if args.from_dump is not None:
        dump = read_dump(args.from_dump)
    else:
        dump = cal.reference_campaign(args.data, args.problems, reruns=args.reruns,
                                      seed=args.seed, sample=args.sample, cap_s=args.cap,
                                      max_references=args.max_references, urls=args.urls,
                                      cache_dir=args.cache_dir)
        write_dump(dump, args.out / "campaign.json.gz")
    report = cal.fit_campaign(dump)
    (args.out / "calibration.json").write_text(json.dumps(report, indent=1) + "\n")
    text = markdown(report, dump)
    (args.out / "calibration.md").write_text(text)
    plot(dump, report, args.out / "calibration.png")
    print(text)
    if args.name:
        path = cal.store_calibration(args.name, report, dump, args.calibration_dir, args.family)
        print(f"stored Gamma as {path}; use it with the override calibration.name={args.name}")
    print(f"wrote {args.out / 'calibration.json'}, {args.out / 'calibration.md'}, "
          f"{args.out / 'calibration.png'}"
          + ("" if args.from_dump else f", {args.out / 'campaign.json.gz'}"))
    return 0


def markdown(report, dump) -> str:
    state = dump["timing_pass"].get("sandbox_state", {})
    lines = [f"# Timing calibration ({dump['dataset'].get('name')})", "",
             f"- {report['problems']} problems, {report['reruns']} reruns of every reference, "
             f"{report['observations']} pooled (problem, TO test, reference) observations",
             f"- sandbox: {state.get('client')} on {state.get('host')} "
             f"({(state.get('pool') or {}).get('slots', '?')} slots), measured "
             f"{state.get('measured_at')}, fallback {state.get('fallback')}",
             f"- fresh / stored duration ratio: median {report['fresh_over_stored']['median']:.2f}"
             f" (p5 {report['fresh_over_stored']['p5']:.2f}, p95 "
             f"{report['fresh_over_stored']['p95']:.2f})",
             f"- rerun noise: CV mean {100 * report['rerun_cv']['cv_mean']:.1f} %, median "
             f"{100 * report['rerun_cv']['cv_median']:.1f} %; std mean "
             f"{report['rerun_cv']['std_ms_mean']:.1f} ms", "",
             "| fit | coefficients (highest power first) | train R² | LOPO R² | LOPO RMSE (ms) |",
             "|---|---|---:|---:|---:|"]
    for family, fit in report["fits"].items():
        coefficients = ", ".join(f"{c:.4g}" for c in fit["coefficients"])
        lines.append(f"| {family} | {coefficients} | {fit['train_r2']:.4f} | {fit['cv_r2']:.4f} |"
                     f" {1000 * fit['cv_rmse_s']:.2f} |")
    lines += ["", f"Chosen Gamma (affine): alpha = {report['alpha']:.4f}, "
              f"beta = {1000 * report['beta_s']:.2f} ms", "",
              "| stored vs fresh ranking (LOO mean percentile) | Spearman | mean abs diff (pp) "
              "| problem bias (pp) | mean signed bias (pp) | problems biased the same way |",
              "|---|---:|---:|---:|---:|---:|"]
    for label, agreement in report["ranking"].items():
        lines.append(f"| {label} | {agreement['spearman']:.3f} | "
                     f"{agreement['mean_abs_diff_pp']:.1f} | {agreement['problem_bias_pp']:.1f} |"
                     f" {agreement['problem_bias_signed_pp']:+.1f} |"
                     f" {agreement['problems_same_sign']}/{agreement['problems']} |")
    return "\n".join(lines) + "\n"


def plot(dump, report, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    from jaxopt_rl.evaluation.calibration import pooled_observations, problem_blocks

    _, stored, fresh = pooled_observations(problem_blocks(dump))
    fig, ax = plt.subplots(figsize=(5.5, 4.5))
    ax.scatter(stored, fresh, s=6, alpha=0.4, color="grey", label="observations")
    grid = np.linspace(0, stored.max() * 1.05, 100)
    for family, fit in report["fits"].items():
        ax.plot(grid, np.polyval(fit["coefficients"], grid),
                label=f"{family} (LOPO R² {fit['cv_r2']:.3f})")
    ax.plot(grid, grid, color="black", linestyle=":", linewidth=0.8, label="identity")
    ax.set(xlabel="stored duration (s)", ylabel="fresh duration, mean over reruns (s)",
           title="stored -> fresh reference durations")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _drift(args) -> int:
    from jaxopt_rl.data.lookup import command_cache_dir, find_data_set
    from jaxopt_rl.evaluation.calibration import drift_check
    from jaxopt_rl.rewards.env_config import CalibrationConfig
    from sandbox_cluster import connect

    if not args.name:
        raise ValueError("calibrate drift: give --name of the stored calibration to check")
    if not args.problems:
        raise ValueError("calibrate drift: empty canary list; give --problems ID ...")
    calibration = CalibrationConfig(name=args.name)
    dataset = find_data_set(args.data, args.cache_dir or command_cache_dir(args.data))
    urls = [u for u in args.urls.split(",") if u.strip()]
    sandbox = connect(urls or None, fallback="none")
    try:
        figures = drift_check(dataset, sandbox, calibration, args.problems,
                              reruns=args.reruns, cap_s=args.cap, seed=args.seed)
    finally:
        sandbox.close()
    print(json.dumps(figures, indent=1))
    return 1 if figures.get("refit_due") else 0
