"""Outputs of a replayed evaluation: `eval.json` (the exact schema other tools read),
`eval_details.json`, `report.md`, `p_tau.png` (pass@k against tau with CI bands),
`calibration_sweep.png`; and the side-by-side comparison of several dumps.

`eval.json`: `{"model", "n", "problems", "pass_at": {"1": {"p100": {"value", "ci"},
..., "p10": ...}, "10": {...}}, "timing_pass": {"shuffled", "references_included",
"sandbox_state"}}`, fractions in [0, 1]. Everything else (per difficulty, calibration, win rates,
per problem) goes to `eval_details.json` so the stated schema stays exact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _tau(key: str) -> int:
    return int(key[1:])


def _fmt(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{100 * value:.{digits}f}"


def _cell(entry: dict[str, Any]) -> str:
    lo, hi = entry["ci"]
    if entry["value"] is None:
        return "—"
    return f"{_fmt(entry['value'])} [{_fmt(lo)}, {_fmt(hi)}]"


def pass_table(pass_at: dict[str, Any], taus=(100, 50, 30, 10)) -> list[str]:
    header = "| k | " + " | ".join(f"p{t}" for t in taus) + " |"
    lines = [header, "|---|" + "---:|" * len(taus)]
    for k, row in pass_at.items():
        lines.append(f"| pass@{k} | " + " | ".join(_cell(row[f"p{t}"]) for t in taus) + " |")
    return lines


def _integrity_lines(details: dict[str, Any]) -> list[str]:
    """What the replay could not rank (absent from results written before it was counted)."""
    lines = []
    if details.get("unrankable_samples"):
        lines.append(f"- unrankable samples (no measured reference duration on their problem; "
                     f"they never meet a speed threshold below p100): "
                     f"{details['unrankable_samples']}")
    unranked = details.get("unranked_tests")
    if unranked and unranked["tests"]:
        lines.append(f"- {unranked['tests']} optimization test(s) no measured reference "
                     f"duration ranks (no usable reference, or all lost) in "
                     f"{len(unranked['by_problem'])} problem(s): {unranked['samples']} c~ "
                     f"sample(s) ran them ({unranked['samples_at_cap']} at the cap there, "
                     f"{unranked['seconds']:.2f} s in all), time that costs them nothing")
    return lines


def markdown_report(result: dict[str, Any], sweep: dict[str, Any] | None = None) -> str:
    ev, details = result["eval"], result["details"]
    calibration = details["calibration"]
    cal_text = (f"{calibration.get('kind')} alpha={calibration.get('alpha'):.4f} "
                f"beta={calibration.get('beta_s'):.4f} s"
                + (f" (name {calibration['name']})" if calibration.get("name") else "")
                + (f" ({calibration['source']})" if calibration.get("source") else ""))
    lines = [f"# Evaluation: {ev['model']}", "",
             f"- data set {details['dataset']} (fingerprint {details['fingerprint']}), "
             f"{ev['problems']} problems, n = {ev['n']} samples each",
             f"- ranking {details['ranking']} (ties {details['ties']}) against "
             f"{details['references']} reference durations; calibration {cal_text}",
             f"- timing pass: shuffled {ev['timing_pass']['shuffled']}, references included "
             f"{ev['timing_pass']['references_included']}; inconclusive samples left out: "
             f"{details['inconclusive_samples']}",
             *_integrity_lines(details),
             f"- bootstrap: {details['bootstrap']['resamples']} resamples of the problems, "
             f"{100 * details['bootstrap']['level']:.0f} % percentile intervals", "",
             "## pass@k(p_tau), percent [CI]", "", *pass_table(ev["pass_at"]), ""]
    for difficulty, entry in details["by_difficulty"].items():
        lines += [f"### {difficulty} ({entry['problems']} problems)", "",
                  *pass_table(entry["pass_at"]), ""]
    if "win_rates" in details:
        wr = details["win_rates"]
        lines += [f"## Speed win rates against {wr['baseline']} ({wr['problems']} problems)", "",
                  "| | win rate | wins | losses | draws | excluded |", "|---|---:|---:|---:|---:|---:|"]
        for name in ("WR_b", "WR_m"):
            w = wr[name]
            lines.append(f"| {name} | {_fmt(w['win_rate'])} | {w['wins']} | {w['losses']} | "
                         f"{w['draws']} | {w['excluded']} |")
        lines.append("")
    if sweep is not None:
        lines += ["## Calibration sensitivity (pass@1, percent)", ""]
        taus = [k for k in sweep["beta"][0] if k.startswith("p")]
        lines += ["| alpha | beta (s) | " + " | ".join(taus) + " |",
                  "|---:|---:|" + "---:|" * len(taus)]
        for row in sweep["beta"] + sweep["alpha"]:
            lines.append(f"| {row['alpha']:.4f} | {row['beta_s']:.4f} | "
                         + " | ".join(_fmt(row[t]) for t in taus) + " |")
        lines.append("")
    return "\n".join(lines)


def plot_p_tau(curves: dict[str, dict[str, Any]], path: Path, title: str = "") -> None:
    """pass@k against tau for one or several runs (`{label: pass_at}`), CI bands shaded."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ks = list(next(iter(curves.values())).keys())
    fig, axes = plt.subplots(1, len(ks), figsize=(5.2 * len(ks), 3.8), squeeze=False)
    for ax, k in zip(axes[0], ks):
        for number, (label, pass_at) in enumerate(curves.items()):
            keys = sorted(pass_at[k], key=_tau)
            taus = [_tau(key) for key in keys]
            value = [_nan(pass_at[k][key]["value"]) for key in keys]
            lo = [_nan(pass_at[k][key]["ci"][0]) for key in keys]
            hi = [_nan(pass_at[k][key]["ci"][1]) for key in keys]
            colour = f"C{number % 10}"
            ax.plot(taus, value, "o-", color=colour, label=label)
            ax.fill_between(taus, lo, hi, color=colour, alpha=0.2)
        ax.set(xlabel="tau (q_QP <= tau / 100)", ylabel=f"pass@{k}", ylim=(-0.02, 1.02),
               title=f"pass@{k}(p_tau){' — ' + title if title else ''}")
        ax.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _nan(value):
    return float("nan") if value is None else value


def plot_sweep(sweep: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    taus = [k for k in sweep["beta"][0] if k.startswith("p")]
    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 3.8))
    for tau in taus:
        left.plot([r["beta_s"] * 1000 for r in sweep["beta"]], [_nan(r[tau]) for r in sweep["beta"]],
                  "o-", label=tau)
        right.plot([r["alpha"] for r in sweep["alpha"]], [_nan(r[tau]) for r in sweep["alpha"]],
                   "o-", label=tau)
    base = sweep["base"]
    left.axvline(base["beta_s"] * 1000, color="grey", linestyle=":")
    right.axvline(base["alpha"], color="grey", linestyle=":")
    left.set(xlabel=f"beta (ms), alpha = {base['alpha']:.4f}", ylabel=f"pass@{sweep['k']}",
             title="reference intercept sweep", ylim=(-0.02, 1.02))
    right.set(xlabel=f"alpha, beta = {1000 * base['beta_s']:.1f} ms", ylabel=f"pass@{sweep['k']}",
              title="reference slope sweep", ylim=(-0.02, 1.02))
    left.legend(fontsize="small")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(result: dict[str, Any], out_dir: Path, sweep: dict[str, Any] | None = None
                  ) -> dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"eval": out_dir / "eval.json", "details": out_dir / "eval_details.json",
             "report": out_dir / "report.md", "p_tau": out_dir / "p_tau.png"}
    paths["eval"].write_text(json.dumps(result["eval"], indent=1) + "\n")
    details = dict(result["details"])
    if sweep is not None:
        details["calibration_sweep"] = sweep
    paths["details"].write_text(json.dumps(details, indent=1) + "\n")
    paths["report"].write_text(markdown_report(result, sweep))
    plot_p_tau({result["eval"]["model"]: result["eval"]["pass_at"]}, paths["p_tau"])
    if sweep is not None:
        paths["sweep"] = out_dir / "calibration_sweep.png"
        plot_sweep(sweep, paths["sweep"])
    return paths


def compare_markdown(results: list[dict[str, Any]], labels: list[str],
                     taus=(100, 50, 30, 10)) -> str:
    columns = [f"pass@{k} p{t}" for k in ("1", "10") for t in taus]
    lines = ["| run | problems | n | " + " | ".join(columns) + " |",
             "|---|---:|---:|" + "---:|" * len(columns)]
    for label, result in zip(labels, results):
        ev = result["eval"]
        cells = [_cell(ev["pass_at"][k][f"p{t}"]) if k in ev["pass_at"] else "—"
                 for k in ("1", "10") for t in taus]
        lines.append(f"| {label} | {ev['problems']} | {ev['n']} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
