"""The demo's report: what three replayed evaluations and two training logs become.

    out_dir/report.json          the exact schema other tools read: {"runs": {"sft": R,
                                 "qp_p30": R, "baseline": R}, "baseline_env", "wall_s",
                                 "phases_s"}; R maps p100, p50, p30, p10 to {"pass@1", "ci"}
    out_dir/report_details.json  everything else: verdict, settings, held-out figures, every
                                 tau and k, per problem, duration ratios, training summary
    out_dir/report.md            what was run, how long, the table, what it means
    out_dir/p_tau.png            pass@1 against tau, the three models, CI bands
    out_dir/training.png         reward mean and zero-advantage group rate over steps, both runs
    out_dir/durations.png        candidate durations relative to the references, per model

Pure: it reads only its arguments (the results of `jaxopt_rl.evaluation.replay.replay`, the
dumps of the shared timing pass, the rows of each run's metrics.jsonl) and writes only out_dir.
The verdict is computed from report.json by `verdict`, never written by hand.
Dimension letters: P problems, G samples per problem, T tests, H references.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.evaluation.replay import dump_batch
from jaxopt_rl.evaluation.report import plot_p_tau
from jaxopt_rl.rewards.records import SUCCESS, TEST_KIND_CODE, TIMEOUT

RUNS = ("sft", "qp_p30", "baseline")
TRAINED = ("qp_p30", "baseline")
TAUS = (100, 50, 30, 10)
LABELS = {"sft": "SFT start", "qp_p30": "QP-p30", "baseline": "correctness-only"}
P100_MAX_DROP_POINTS = 3.0
HELD_OUT_NOTE = ("A 4 M-parameter model cannot generalise to problems it has not seen, so the "
                 "main table is measured on the problems it was trained on. The held-out "
                 "split's figures are given for honesty, not as evidence.")
TRAINING_CURVES = (("reward/mean", "reward mean"),
                   ("groups/zero_advantage_rate", "zero-advantage group rate"))


class ReportError(ValueError):
    """An input the report cannot be written from (names the run and the key)."""


# ---- report.json and the verdict ------------------------------------------------------------


def run_figures(evaluation: dict[str, Any], name: str) -> dict[str, dict[str, Any]]:
    """R of report.json from one replay result: {"p100": {"pass@1", "ci": [low, high]}, ...}."""
    try:
        pass_at_1 = evaluation["eval"]["pass_at"]["1"]
    except (KeyError, TypeError):
        raise ReportError(f"evals[{name!r}]: no eval.pass_at['1'] (not a replay result)") from None
    out = {}
    for tau in TAUS:
        entry = pass_at_1.get(f"p{tau}")
        if entry is None:
            raise ReportError(f"evals[{name!r}]: pass@1 p{tau} missing (replay ran without "
                              f"tau={tau})")
        value, (low, high) = entry["value"], entry["ci"]
        if value is None or low is None or high is None:
            raise ReportError(f"evals[{name!r}]: pass@1 p{tau} is undefined (no problem had a "
                              "counted sample: every sample inconclusive?)")
        out[f"p{tau}"] = {"pass@1": float(value), "ci": [float(low), float(high)]}
    return out


def verdict(report_json: dict) -> dict:
    """The demo's two criteria on the numbers: QP-p30's p30 lower CI bound above both other
    models' upper bounds, and its p100 no more than 3 points below the SFT start's."""
    runs = report_json["runs"]
    qp = runs["qp_p30"]
    others_high = max(runs["sft"]["p30"]["ci"][1], runs["baseline"]["p30"]["ci"][1])
    gap = qp["p30"]["ci"][0] - others_high
    drop_points = 100.0 * (runs["sft"]["p100"]["pass@1"] - qp["p100"]["pass@1"])
    return {"p30_separated": bool(gap > 0),
            # the tolerance keeps a drop of exactly 3 points (computed in binary) inside
            "p100_kept": bool(drop_points <= P100_MAX_DROP_POINTS + 1e-9),
            "p30_gap_low_minus_high": float(gap), "p100_drop_points": float(drop_points)}


def verdict_sentences(report_json: dict, ruling: dict) -> list[str]:
    runs = report_json["runs"]
    qp_low = runs["qp_p30"]["p30"]["ci"][0]
    sft_high, base_high = runs["sft"]["p30"]["ci"][1], runs["baseline"]["p30"]["ci"][1]
    gap = 100 * ruling["p30_gap_low_minus_high"]
    bounds = (f"QP-p30's p30 pass@1 lower CI bound ({_pct(qp_low)} %) against the upper bounds "
              f"of the SFT start ({_pct(sft_high)} %) and of the correctness-only run "
              f"({_pct(base_high)} %)")
    if ruling["p30_separated"]:
        speed = (f"Faster correct code: yes. {bounds}: above both by {gap:.1f} points, so the "
                 "gain at p30 is beyond the bootstrap CI.")
    else:
        speed = (f"Faster correct code: not shown. {bounds}: {-gap:.1f} points short of the "
                 "higher one, so the gain at p30 (if any) is within the bootstrap CI.")
    drop = ruling["p100_drop_points"]
    change = f"{drop:.1f} points below" if drop >= 0 else f"{-drop:.1f} points above"
    correct = (f"Correctness kept: {'yes' if ruling['p100_kept'] else 'no'}. QP-p30's p100 "
               f"pass@1 ({_pct(runs['qp_p30']['p100']['pass@1'])} %) is {change} the SFT "
               f"start's ({_pct(runs['sft']['p100']['pass@1'])} %); the limit is "
               f"{P100_MAX_DROP_POINTS:.0f} points below.")
    met = ruling["p30_separated"] and ruling["p100_kept"]
    overall = ("Both criteria of the demo (faster correct code beyond the CI, correctness "
               "kept) are met in this run." if met else
               "The demo's criteria (faster correct code beyond the CI, correctness kept) are "
               "not both met in this run.")
    return [speed, correct, overall]


# ---- candidate durations against the references ---------------------------------------------


def duration_ratios(dump: dict[str, Any]) -> np.ndarray:
    """Candidate duration / median fresh reference duration, one entry per (passing sample, TO
    test), in problem, sample, test order.

    A sample passes when it succeeds on every T0 and T+ test and succeeds or times out on every
    TO test (the evaluation's strict correctness; a timeout counts at the cap it ran under).
    A reference's duration on a test is the one replay ranks against: the mean over the
    pass's reruns, for a reference whose every rerun succeeded (or timed out) on a measured
    duration; the median is over those. A TO test without such a reference, or a candidate
    duration not measured on the timing fleet, gives no ratio."""
    rb = dump_batch(dump)
    p, g, t = rb.shape
    status_PGT = rb.batch.status_BT.reshape(p, g, t)
    duration_PGT = rb.batch.duration_BT.reshape(p, g, t).astype(np.float64)
    test_mask_PT = rb.batch.test_mask_BT.reshape(p, g, t)[:, 0]
    kind_PT = rb.batch.test_kind_BT.reshape(p, g, t)[:, 0]
    to_PT = test_mask_PT & (kind_PT == TEST_KIND_CODE["TO"])
    cor_PT = test_mask_PT & ~to_PT
    ok_PGT = np.where(to_PT[:, None], (status_PGT == SUCCESS) | (status_PGT == TIMEOUT),
                      status_PGT == SUCCESS)
    passed_PG = rb.sample_mask_PG & np.all(ok_PGT | ~(cor_PT | to_PT)[:, None], axis=-1)
    fresh_PTH = np.where(rb.fresh_usable_PTH, rb.fresh_duration_PTH, np.nan).astype(np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # a test without any usable reference
        median_PT = np.nanmedian(fresh_PTH, axis=-1)
    keep_PGT = (passed_PG[:, :, None] & to_PT[:, None] & np.isfinite(duration_PGT)
                & (np.isfinite(median_PT) & (median_PT > 0))[:, None])
    ratio_PGT = duration_PGT / np.where(keep_PGT, median_PT[:, None], 1.0)
    return ratio_PGT[keep_PGT]


def ratio_summary(ratios: np.ndarray) -> dict[str, Any]:
    if ratios.size == 0:
        return {"measurements": 0, "median": None, "faster_than_median_reference": None}
    return {"measurements": int(ratios.size), "median": float(np.median(ratios)),
            "faster_than_median_reference": float(np.mean(ratios < 1.0))}


# ---- figures ---------------------------------------------------------------------------------


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _label(name: str, baseline_env: str) -> str:
    return f"{LABELS[name]} ({baseline_env})" if name == "baseline" else LABELS[name]


def plot_training(training: Mapping[str, list[dict]], path: Path, baseline_env: str) -> None:
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(TRAINING_CURVES), figsize=(10, 3.6))
    for ax, (key, title) in zip(axes, TRAINING_CURVES):
        for number, run in enumerate(TRAINED):
            rows = [r for r in training.get(run, []) if key in r and "step" in r]
            steps = [r["step"] for r in rows]
            values = [math.nan if r[key] is None else r[key] for r in rows]
            ax.plot(steps, values, "o-", markersize=3, color=f"C{number + 1}",
                    label=_label(run, baseline_env))
        ax.set(xlabel="optimizer step", ylabel=title, title=title)
        ax.legend(fontsize="small")
    axes[1].set_ylim(-0.02, 1.02)
    _save(plt, fig, path)


def plot_durations(ratios: Mapping[str, np.ndarray], path: Path, baseline_env: str) -> None:
    """One histogram per model on a log2 axis; the vertical line is the median reference."""
    plt = _pyplot()
    positive = [r[r > 0] for r in ratios.values()]
    everything = np.concatenate(positive) if positive else np.zeros(0)
    low, high = (everything.min(), everything.max()) if everything.size else (0.5, 2.0)
    low, high = min(low, 0.5), max(high, 2.0)
    bins = np.geomspace(low / 1.05, high * 1.05, 41)
    fig, axes = plt.subplots(len(ratios), 1, figsize=(7, 2.1 * len(ratios) + 0.6),
                             sharex=True, squeeze=False)
    for number, (ax, (name, values)) in enumerate(zip(axes[:, 0], ratios.items())):
        values = values[values > 0]
        if values.size:
            ax.hist(values, bins=bins, color=f"C{number}", alpha=0.8)
            text = f"{values.size} measurements, median {np.median(values):.2f}x"
        else:
            text = "no passing sample"
            ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center")
        ax.axvline(1.0, color="black", linestyle="--", linewidth=1)
        ax.set_xscale("log", base=2)
        ax.set(ylabel="count", title=f"{_label(name, baseline_env)}: {text}")
    axes[-1, 0].set_xlabel("candidate duration / median reference duration (TO tests of "
                           "passing samples; line: 1)")
    _save(plt, fig, path)


def _save(plt, fig, path: Path) -> None:
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


# ---- report.md -------------------------------------------------------------------------------


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.1f}"


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None or entry.get("pass@1") is None:
        return "—"
    low, high = entry["ci"]
    return f"{_pct(entry['pass@1'])} [{_pct(low)}, {_pct(high)}]"


def _figure_table(runs: Mapping[str, dict], baseline_env: str) -> list[str]:
    lines = ["| model | " + " | ".join(f"p{tau}" for tau in TAUS) + " |",
             "|---|" + "---:|" * len(TAUS)]
    for name in RUNS:
        if name in runs:
            lines.append(f"| {_label(name, baseline_env)} | "
                         + " | ".join(_cell(runs[name].get(f"p{tau}")) for tau in TAUS) + " |")
    return lines


def _value_text(value: Any) -> str:
    if isinstance(value, float):
        text = f"{value:.6g}"
    elif isinstance(value, str | int | bool) or value is None:
        text = str(value)
    else:
        text = json.dumps(_plain(value), default=str, separators=(", ", ": "))
    return text.replace("|", "\\|").replace("\n", " ")


def _timing_text(evaluations: dict[str, dict]) -> str:
    def yes(key):
        values = {bool((e.get("timing_pass") or {}).get(key)) for e in evaluations.values()}
        return "mixed" if len(values) > 1 else ("yes" if values.pop() else "no")

    return (f"shuffled: {yes('shuffled')}; references re-executed in it: "
            f"{yes('references_included')}")


def _passes_text(pass_ids: dict[str, Any]) -> str:
    ids = set(pass_ids.values())
    if ids == {None}:
        return "a timing pass (id not recorded"
    if len(ids) == 1:
        return f"one shared timing pass (id {ids.pop()}"
    return "separate timing passes (ids " + ", ".join(f"{n}: {i}" for n, i in pass_ids.items())


def markdown(report_json: dict, details: dict) -> str:
    ruling, env = details["verdict"], report_json["baseline_env"]
    wall = report_json["wall_s"]
    lines = ["# CPU demo: timing rewards against correctness only", "",
             "The tiny model starts from its SFT checkpoint and is trained twice with the "
             "budget and seeds below: with QP-p30 collapsed rewards, and with the "
             f"correctness-only baseline ({env}). The three models are then evaluated in "
             f"{_passes_text(details['timing_pass_ids'])}; "
             f"{_timing_text(details['evaluations'])}) and ranked against the fresh "
             "reference durations measured there.", "",
             "## What was run", "", "| setting | value |", "|---|---|",
             f"| baseline environment | {_value_text(env)} |"]
    lines += [f"| {_value_text(key)} | {_value_text(value)} |"
              for key, value in details["settings"].items()]
    lines += ["", "## How long each phase took", "", "| phase | seconds | share of wall |",
              "|---|---:|---:|"]
    for phase, seconds in report_json["phases_s"].items():
        share = f"{100 * seconds / wall:.0f} %" if wall > 0 else "—"
        lines.append(f"| {_value_text(phase)} | {seconds:.1f} | {share} |")
    lines += [f"| **wall** | **{wall:.1f}** | |", "",
              "## pass@1 on the training problems (percent, 95 % bootstrap CI over problems)", "",
              *_figure_table(report_json["runs"], env), "",
              "p_tau: a sample counts when it is correct and its q_QP is at most tau / 100 "
              "(p100: correct at all; p30: correct, and at most 30 % of the references rank "
              "faster than it).", "", "## What it means", ""]
    lines += [f"- {sentence}" for sentence in verdict_sentences(report_json, ruling)]
    lines += ["", "## Held-out split", "", HELD_OUT_NOTE, ""]
    held = details["held_out"]
    if held is None:
        lines.append("Not evaluated in this run (smoke mode).")
    else:
        lines += [f"{details['held_out_problems']} held-out problems:", "",
                  *_figure_table(held, env)]
    lines += ["", "## Candidate durations relative to the references", "",
              "Every TO test of every sample that passed all its tests: duration / median "
              "fresh reference duration of that test (durations.png).", "",
              "| model | measurements | median ratio | faster than the median reference |",
              "|---|---:|---:|---:|"]
    for name, row in details["durations"].items():
        median = "—" if row["median"] is None else f"{row['median']:.2f}x"
        lines.append(f"| {_label(name, env)} | {row['measurements']} | {median} | "
                     f"{_pct(row['faster_than_median_reference'])} % |")
    lines += ["", "## pass@1 p30 per problem (percent)", "",
              "| problem | " + " | ".join(_label(n, env) for n in RUNS) + " |",
              "|---|" + "---:|" * len(RUNS)]
    for problem, row in details["per_problem"].items():
        lines.append(f"| {_value_text(problem)} | "
                     + " | ".join(_pct((row.get(n) or {}).get("pass@1_p30")) for n in RUNS)
                     + " |")
    lines += ["", "## Figures", "",
              "- `p_tau.png`: pass@1 against tau, the three models, 95 % CI bands",
              "- `training.png`: reward mean and zero-advantage group rate over optimizer steps",
              "- `durations.png`: candidate durations relative to the references, per model", ""]
    return "\n".join(lines)


# ---- the whole report ------------------------------------------------------------------------


def _plain(value: Any) -> Any:
    """JSON-safe: non-finite floats become null, paths and other objects strings."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, bool | int | str) or value is None:
        return value
    if isinstance(value, float | np.floating):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return str(value)


def _held_out_figures(held_out: dict[str, dict]) -> dict[str, dict]:
    out = {}
    for name, evaluation in held_out.items():
        pass_at_1 = evaluation["eval"]["pass_at"]["1"]
        out[name] = {f"p{tau}": {"pass@1": pass_at_1[f"p{tau}"]["value"],
                                 "ci": pass_at_1[f"p{tau}"]["ci"]} for tau in TAUS}
    return out


def _per_problem(evals: dict[str, dict]) -> dict[str, dict[str, dict]]:
    order: list[str] = []
    for name in RUNS:
        order += [p for p in evals[name]["details"]["per_problem"] if p not in order]
    return {problem: {name: evals[name]["details"]["per_problem"].get(problem) for name in RUNS}
            for problem in order}


def _training_summary(rows: list[dict]) -> dict[str, Any]:
    def at(row):
        return {key: row.get(key) for key, _ in TRAINING_CURVES}

    return {"lines": len(rows), "last_step": rows[-1].get("step") if rows else None,
            "first": at(rows[0]) if rows else None, "last": at(rows[-1]) if rows else None}


def write_report(out_dir: Path, *, evals: dict[str, dict], held_out: dict[str, dict] | None,
                 dumps: dict[str, dict], training: dict[str, list[dict]],
                 phases_s: dict[str, float], wall_s: float, baseline_env: str,
                 settings: dict[str, Any]) -> dict[str, Path]:
    """Write report.json, report_details.json, report.md and the three PNGs; return their
    paths. Raises ReportError (before writing anything) when a run's figures are missing."""
    missing = [name for name in RUNS if name not in evals]
    if missing:
        raise ReportError(f"evals: no result for {missing} (needs {list(RUNS)})")
    report_json = {"runs": {name: run_figures(evals[name], name) for name in RUNS},
                   "baseline_env": str(baseline_env), "wall_s": float(wall_s),
                   "phases_s": {str(k): float(v) for k, v in phases_s.items()}}
    ratios = {name: duration_ratios(dumps[name]) if name in dumps else np.zeros(0)
              for name in RUNS}
    ruling = verdict(report_json)
    details = _plain({
        "verdict": ruling, "settings": settings, "baseline_env": baseline_env,
        "held_out": None if held_out is None else _held_out_figures(held_out),
        "held_out_problems": None if held_out is None else max(
            (e["eval"]["problems"] for e in held_out.values()), default=0),
        "pass_at": {name: evals[name]["eval"]["pass_at"] for name in RUNS},
        "evaluations": {name: {"model": evals[name]["eval"]["model"],
                               "n": evals[name]["eval"]["n"],
                               "problems": evals[name]["eval"]["problems"],
                               "references": evals[name]["details"].get("references"),
                               "timing_pass": evals[name]["eval"].get("timing_pass"),
                               "inconclusive_samples":
                                   evals[name]["details"].get("inconclusive_samples")}
                        for name in RUNS},
        "timing_pass_ids": {name: (dumps[name].get("timing_pass") or {}).get("pass_id")
                            if name in dumps else None for name in RUNS},
        "per_problem": _per_problem(evals),
        "durations": {name: ratio_summary(r) for name, r in ratios.items()},
        "training": {run: _training_summary(training.get(run, [])) for run in TRAINED},
    })
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"report_json": out_dir / "report.json",
             "report_details": out_dir / "report_details.json",
             "report_md": out_dir / "report.md", "p_tau": out_dir / "p_tau.png",
             "training": out_dir / "training.png", "durations": out_dir / "durations.png"}
    paths["report_json"].write_text(json.dumps(report_json, indent=1, allow_nan=False) + "\n")
    paths["report_details"].write_text(json.dumps(details, indent=1, allow_nan=False) + "\n")
    paths["report_md"].write_text(markdown(report_json, details))
    plot_p_tau({_label(name, baseline_env): {"1": evals[name]["eval"]["pass_at"]["1"]}
                for name in RUNS}, paths["p_tau"], title="training problems")
    plot_training(training, paths["training"], baseline_env)
    plot_durations(ratios, paths["durations"], baseline_env)
    return paths


def final_screen(paths: dict[str, Path], report: dict) -> str:
    """The CLI's last words: the table, the verdict, and where everything is. `report` is the
    report.json dict; every entry of `paths` is listed (the pipeline may add its own)."""
    ruling = verdict(report)
    width = max(len(_label(n, report["baseline_env"])) for n in RUNS)
    lines = [f"demo finished in {report['wall_s']:.0f} s "
             f"({', '.join(f'{k} {v:.0f} s' for k, v in report['phases_s'].items())})", "",
             f"{'pass@1 %':<{width}}  " + "  ".join(f"{f'p{t}':>18}" for t in TAUS)]
    for name in RUNS:
        cells = "  ".join(f"{_cell(report['runs'][name][f'p{t}']):>18}" for t in TAUS)
        lines.append(f"{_label(name, report['baseline_env']):<{width}}  {cells}")
    lines += ["", f"p30 separated (QP-p30 low CI - best other high CI): "
              f"{'yes' if ruling['p30_separated'] else 'no'} "
              f"({100 * ruling['p30_gap_low_minus_high']:+.1f} points)",
              f"p100 kept (QP-p30 - SFT start >= -{P100_MAX_DROP_POINTS:.0f} points): "
              f"{'yes' if ruling['p100_kept'] else 'no'} "
              f"({-ruling['p100_drop_points']:+.1f} points)", "", "written:"]
    key_width = max((len(k) for k in paths), default=0)
    lines += [f"  {key:<{key_width}}  {path}" for key, path in paths.items()]
    return "\n".join(lines)
