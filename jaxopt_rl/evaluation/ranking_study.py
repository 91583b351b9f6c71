"""Stability of the 17 ranking metrics on our data: the paper's Table 39 (App. D.3;
docs/design/rewards.md §4, docs/design/sandbox-timing.md §3.9) from one calibration campaign (a dump
whose references were re-executed R times on the optimization tests, `jaxopt-rl calibrate`).

Each reference `h` of a problem plays the candidate; the pool is the OTHER references. The
live-scale truth is the pool's fresh durations (mean over the R reruns). Per metric:

  * rerun noise: the candidate's single-run fresh durations (run r = 1..R) against the truth
    pool; std over the R runs per (problem, reference), averaged within a problem, then
    reported as mean ± sd across problems (pp). Needs R >= 2.
  * LOPO dispersion (affine / quadratic): the candidate's fresh mean against the pool's STORED
    durations mapped by the fit that held the problem out, minus the same metric against the
    truth pool; the std of that difference over all (problem, reference) pairs (pp).
  * dynamic range: per problem, the metric of the slowest reference (largest fresh total)
    minus that of the fastest, both against the truth pool (pp; larger separates better).

Higher-is-better metrics (top-k shares, win rates) are flipped to `1 - value` so every column
reads lower-is-better; stds do not change. Per-test percentiles use the metric-sweep tie rule
(average). Verdict: the metric with the lowest LOPO-affine dispersion (the paper's criterion;
the paper finds mean percentile).
Dimension letters: B (problem, reference[, run]) rows, T tests, H references.
"""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from jaxopt_rl.evaluation import calibration as cal
from jaxopt_rl.evaluation.ranking_metrics import RANKING_METRICS


def _rows(blocks, candidate, pool):
    """Stack (candidate, pool) rows: candidate(block, h) -> [T] or [R, T]; pool(block, p) ->
    [T, H]. Returns cand_BT, ref_BTH, mask_BTH, tests_BT and the (problem, h) of each row."""
    t_max = max(b["valid_TH"].shape[0] for b in blocks)
    h_max = max(b["valid_TH"].shape[1] for b in blocks)
    cand, ref, mask, tests, owner = [], [], [], [], []
    for p, block in enumerate(blocks):
        valid = block["valid_TH"]
        t, h_count = valid.shape
        pool_TH = pool(block, p)
        for h in range(h_count):
            values = np.atleast_2d(candidate(block, h))
            others = valid.copy()
            others[:, h] = False
            for row in values:
                cand.append(np.pad(row, (0, t_max - t)))
                ref.append(np.pad(pool_TH, ((0, t_max - t), (0, h_max - h_count))))
                mask.append(np.pad(others, ((0, t_max - t), (0, h_max - h_count))))
                tests.append(np.pad(valid[:, h], (0, t_max - t)))
                owner.append((p, h))
    return (np.array(cand, np.float32), np.array(ref, np.float32), np.array(mask, bool),
            np.array(tests, bool), owner)


def _scores(metric, arrays) -> np.ndarray:
    cand, ref, mask, tests, _ = arrays
    values = np.asarray(metric(cand, ref, mask, tests, ties="average"), np.float64)
    return 1 - values if metric.higher_is_better else values


def study(dump: dict[str, Any]) -> dict[str, Any]:
    blocks = [b for b in cal.problem_blocks(dump) if b["valid_TH"].shape[1] >= 3]
    if len(blocks) < 2:
        raise ValueError("ranking study: needs at least two problems with >= 3 re-executed "
                         "references each")
    reruns = blocks[0]["runs_RTH"].shape[0]
    problem, stored, fresh = cal.pooled_observations(blocks)
    folds = {family: cal.lopo(family, problem, stored, fresh)["folds"]
             for family in ("affine", "quadratic")}

    def truth(block, p):
        return block["fresh_TH"]

    fresh_mean = _rows(blocks, lambda b, h: b["fresh_TH"][:, h], truth)
    single_runs = _rows(blocks, lambda b, h: b["runs_RTH"][:, :, h], truth)
    calibrated = {family: _rows(blocks, lambda b, h: b["fresh_TH"][:, h],
                                lambda b, p, f=family: np.polyval(folds[f][p], b["stored_TH"]))
                  for family in folds}
    owners = fresh_mean[4]
    totals = {(p, h): float(np.sum(np.where(b["valid_TH"][:, h], b["fresh_TH"][:, h], 0)))
              for p, b in enumerate(blocks) for h in range(b["valid_TH"].shape[1])}
    rows = []
    for name, metric in RANKING_METRICS.items():
        truth_B = _scores(metric, fresh_mean)
        row: dict[str, Any] = {"metric": name}
        for family, arrays in calibrated.items():
            diff = _scores(metric, arrays) - truth_B
            row[f"lopo_{family}_std_pp"] = _pp(np.nanstd(diff)) if np.isfinite(diff).any() else None
        if reruns >= 2:
            runs_BR = _scores(metric, single_runs).reshape(-1, reruns)
            with warnings.catch_warnings():  # a row with < 2 defined runs has no std (NaN)
                warnings.simplefilter("ignore", RuntimeWarning)
                std_B = np.nanstd(runs_BR, axis=1, ddof=1)
            per_problem = [np.nanmean(std_B[[i for i, o in enumerate(owners) if o[0] == p]])
                           for p in range(len(blocks))]
            per_problem = np.array([v for v in per_problem if np.isfinite(v)])
            row["rerun_std_pp"] = _pp(per_problem.mean()) if per_problem.size else None
            row["rerun_std_sd_pp"] = _pp(per_problem.std()) if per_problem.size else None
        else:
            row["rerun_std_pp"] = row["rerun_std_sd_pp"] = None
        separation = []
        for p in range(len(blocks)):
            mine = [(totals[o], i) for i, o in enumerate(owners) if o[0] == p]
            fastest, slowest = min(mine)[1], max(mine)[1]
            gap = truth_B[slowest] - truth_B[fastest]
            if np.isfinite(gap):
                separation.append(gap)
        row["separation_pp"] = _pp(np.mean(separation)) if separation else None
        rows.append(row)
    ranked = sorted((r for r in rows if r["lopo_affine_std_pp"] is not None),
                    key=lambda r: (r["lopo_affine_std_pp"], r["rerun_std_pp"] or 0))
    best = ranked[0]["metric"]
    close = [r["metric"] for r in ranked[1:]
             if r["lopo_affine_std_pp"] - ranked[0]["lopo_affine_std_pp"] < 0.1]
    verdict = (f"most stable: {best} (lowest LOPO-affine dispersion, "
               f"{ranked[0]['lopo_affine_std_pp']:.1f} pp"
               + (f"; within 0.1 pp: {', '.join(close)}" if close else "")
               + "); the paper's pick, mean_percentile, "
               + ("agrees." if best == "mean_percentile" else
                  f"ranks {[r['metric'] for r in ranked].index('mean_percentile') + 1} of "
                  f"{len(ranked)} here."))
    return {"rows": rows, "verdict": verdict, "most_stable": best, "problems": len(blocks),
            "reruns": reruns, "candidates": len(owners),
            "dataset": dump["dataset"].get("name")}


def _pp(value) -> float:
    return float(100 * value)


def markdown(result: dict[str, Any]) -> str:
    def f(value):
        return "—" if value is None else f"{value:.1f}"

    lines = [f"# Ranking-metric stability ({result['dataset']}; Table 39 shape)", "",
             f"{result['problems']} problems, {result['candidates']} reference candidates, "
             f"{result['reruns']} reruns. Percentile points, lower is better except separation.",
             "", "| metric | LOPO-diff std, affine | LOPO-diff std, quadratic | rerun std "
             "(mean ± sd over problems) | strong-weak separation |", "|---|---:|---:|---:|---:|"]
    for row in result["rows"]:
        lines.append(f"| {row['metric']} | {f(row['lopo_affine_std_pp'])} | "
                     f"{f(row['lopo_quadratic_std_pp'])} | {f(row['rerun_std_pp'])} ± "
                     f"{f(row['rerun_std_sd_pp'])} | {f(row['separation_pp'])} |")
    lines += ["", f"Verdict: {result['verdict']}", ""]
    return "\n".join(lines)
