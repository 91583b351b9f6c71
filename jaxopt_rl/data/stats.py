"""Dataset statistics: the funnel, split counts, per-problem filterability, pooled timing tables
(docs/design/dataset-eval.md §8 item 13: the paper's Table 21/22 analogues), the before/after
augmentation diagnostics of item 14 there (false-positive and correct-pass rates on T0, on the raw
augmented suite and on the filtered one, correctness round) and duration histograms.

Pooled timing is over the stored reference durations with a usable status (success, or timeout
at the cap), per test kind: count, mean, median, p90, p95, p99, share above 1 s; and per problem
the share of tests whose mean reference duration exceeds 0.5 s / 1 s, summarised as the share of
problems with >= 10 % such tests.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from jaxopt_rl.data.schema import TEST_KINDS
from jaxopt_rl.data.store import Dataset


def _durations_by_kind(dataset: Dataset) -> tuple[dict[str, np.ndarray], dict[str, list]]:
    """Pooled usable durations per kind, and per kind the per-problem per-test mean arrays."""
    kinds_of: dict[tuple[str, str], str] = {}
    import pyarrow.parquet as pq

    table = pq.read_table(dataset.root / "tests.parquet", columns=["problem_id", "test_id", "kind"])
    for problem_id, test_id, kind in zip(*(table.column(c).to_pylist() for c in table.column_names)):
        kinds_of[(problem_id, test_id)] = kind
    pooled: dict[str, list[float]] = {k: [] for k in TEST_KINDS}
    per_test: dict[tuple[str, str], list[float]] = {}
    for row in dataset.duration_rows():
        if row["status"] not in ("success", "timeout"):
            continue
        key = (row["problem_id"], row["test_id"])
        kind = kinds_of.get(key)
        if kind is None:
            raise ValueError(f"durations.parquet: row for unknown test {key}")
        pooled[kind].append(row["duration_s"])
        per_test.setdefault(key, []).append(row["duration_s"])
    per_problem: dict[str, dict[str, list[float]]] = {k: {} for k in TEST_KINDS}
    for (problem_id, test_id), values in per_test.items():
        per_problem[kinds_of[(problem_id, test_id)]].setdefault(problem_id, []).append(
            float(np.mean(values)))
    return ({k: np.asarray(v) for k, v in pooled.items()},
            {k: list(v.values()) for k, v in per_problem.items()})


def timing_table(dataset: Dataset) -> list[dict[str, Any]]:
    pooled, per_problem = _durations_by_kind(dataset)
    rows = []
    for kind in TEST_KINDS:
        values = pooled[kind]
        if values.size == 0:
            continue
        p50, p90, p95, p99 = np.percentile(values, [50, 90, 95, 99])
        problems = per_problem[kind]
        rows.append({
            "kind": kind, "durations": int(values.size), "mean_s": float(values.mean()),
            "median_s": float(p50), "p90_s": float(p90), "p95_s": float(p95), "p99_s": float(p99),
            "share_over_1s": float((values > 1.0).mean()),
            "problems": len(problems),
            "problems_10pct_over_0.5s": float(np.mean([np.mean(np.asarray(m) > 0.5) >= 0.1
                                                        for m in problems])),
            "problems_10pct_over_1s": float(np.mean([np.mean(np.asarray(m) > 1.0) >= 0.1
                                                      for m in problems])),
        })
    return rows


def filterability_table(dataset: Dataset) -> list[dict[str, Any]]:
    rows = []
    for problem_id in dataset.problem_ids():
        r = dataset.record(problem_id)
        rows.append({"problem_id": problem_id, "split": r.split, "difficulty": r.difficulty,
                     "n_tests": r.n_tests, "n_correct": r.n_correct, "n_incorrect": r.n_incorrect,
                     "robust_cv": r.robust_cv, "length_r": r.length_r,
                     "duration_filterable": r.duration_filterable})
    return rows


def split_counts(dataset: Dataset) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in dataset.problems.values():
        counts[record.split or "none"] = counts.get(record.split or "none", 0) + 1
    return dict(sorted(counts.items()))


def augmentation_diagnostics(dataset: Dataset) -> dict[str, Any]:
    """Means over problems of the false-positive rate and the correct-solution pass rate on
    T0 alone (before), on the raw augmented suite, and on the filtered suite
    (docs/design/dataset-eval.md §2.3)."""
    rows = [json.loads(line) for line in
            (dataset.root / "problem_stats.jsonl").read_text().splitlines() if line.strip()]
    rounds = [r for r in rows if "correctness" in r.get("filters", {})]
    if not rounds:
        return {}
    c = [r["filters"]["correctness"] for r in rounds]
    return {
        "problems": len(rounds),
        "false_positive_t0": float(np.mean([r.get("false_positive_t0", 0.0) for r in rounds])),
        "false_positive_raw": float(np.mean([f["raw_false_positive_rate"] for f in c])),
        "false_positive_filtered": float(np.mean([f["false_positive_rate"] for f in c])),
        "correct_pass_raw": float(np.mean([f["raw_correct_pass_rate"] for f in c])),
        "correct_pass_filtered": float(np.mean([1.0 - f["correct_drop"] for f in c])),
    }


def dataset_stats(dataset: Dataset) -> dict[str, Any]:
    filterable = [r for r in dataset.problems.values() if r.duration_filterable]
    by_kind = {}
    for kind in TEST_KINDS:
        cvs = [r.robust_cv.get(kind) for r in dataset.problems.values()]
        cvs = [c for c in cvs if c is not None]
        threshold = dataset.manifest.get("build_config", {}).get("filterability", {}).get(
            "threshold", 0.3)
        by_kind[kind] = {"problems_with_cv": len(cvs),
                         "share_filterable": float(np.mean([c >= threshold for c in cvs]))
                         if cvs else None}
    return {
        "name": dataset.manifest.get("name"),
        "funnel": dataset.funnel(),
        "splits": split_counts(dataset),
        "duration_filterable": len(filterable),
        "filterability_by_kind": by_kind,
        "timing": timing_table(dataset),
        "augmentation": augmentation_diagnostics(dataset),
        "problems": filterability_table(dataset),
        "rejections": dataset.rejections(),
    }


def plot_duration_histograms(dataset: Dataset, path: str | Path) -> Path:
    """PNG: histogram of pooled reference durations per test kind (log-spaced bins)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    pooled, _ = _durations_by_kind(dataset)
    fig, ax = plt.subplots(figsize=(7, 4))
    positive = np.concatenate([v[v > 0] for v in pooled.values()] or [np.ones(1)])
    low, high = max(positive.min(), 1e-4), max(positive.max(), 1e-3)
    bins = np.logspace(np.log10(low), np.log10(high * 1.01), 40)
    for kind, color in zip(TEST_KINDS, ("tab:blue", "tab:green", "tab:red")):
        values = pooled[kind]
        if values.size:
            # Shares, not counts: T0 has far fewer pairs than TO and would vanish under it.
            weights = np.full(values.size, 1.0 / values.size)
            label = f"{kind} (n={values.size}, median {np.median(values) * 1e3:.0f} ms)"
            ax.hist(np.clip(values, low, None), bins=bins, weights=weights, histtype="stepfilled",
                    alpha=0.3, color=color)
            ax.hist(np.clip(values, low, None), bins=bins, weights=weights, histtype="step",
                    linewidth=1.8, color=color, label=label)
    ax.set_xscale("log")
    ax.set_xlabel("reference duration (s, log scale)")
    ax.set_ylabel("share of (test, reference) pairs")
    ax.set_title(f"{dataset.manifest.get('name', dataset.root.name)}: stored reference durations")
    ax.legend()
    return _save(fig, path)


def plot_filterability(dataset: Dataset, path: str | Path) -> Path:
    """PNG: robust CV per problem on T0 vs TO, with the threshold line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ids = dataset.problem_ids()
    fig, ax = plt.subplots(figsize=(max(6, 0.3 * len(ids) + 2), 4))
    x = np.arange(len(ids))
    for offset, kind, color in ((-0.2, "T0", "tab:blue"), (0.2, "TO", "tab:red")):
        cv = [dataset.record(p).robust_cv.get(kind) for p in ids]
        ax.bar(x + offset, [np.nan if c is None else c for c in cv], width=0.4, color=color,
               label=f"robust CV on {kind}")
    threshold = dataset.manifest.get("build_config", {}).get("filterability", {}).get("threshold", 0.3)
    ax.axhline(threshold, color="black", linestyle="--", linewidth=1, label=f"threshold {threshold}")
    ax.set_xticks(x, ids, rotation=90, fontsize=7)
    ax.set_ylabel("IQR / median of per-test mean duration")
    ax.legend()
    return _save(fig, path)


def _save(fig, path: str | Path) -> Path:
    import matplotlib.pyplot as plt

    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
