"""The simulator's outputs: a ranked table (Markdown, JSON, CSV), the curves, the heatmaps.

Heatmaps follow the layout of the paper's Figure 45 (seed 000, l.1707): for a two-axis grid,
one panel per diagnostic (deviation from y = x, AUC raw and smoothed, quality correlation
("monotonicity") raw and smoothed, variance around trend, and steepness), rows and columns
the two axes, a red-yellow-green scale *relative within each panel*; for a one-axis grid (the
QP threshold sweep), one panel whose rows are the axis values and whose columns are the
diagnostics, each column on its own scale. Green marks the better end of the diagnostic's
order (`ORDER`); for AUC, the middle (0.5) is green and both sparse and saturated are red.

Ranking order (choice): deviation and variance ascending; steepness and quality correlations
descending; AUC by distance from 0.5 (neither sparse nor saturated) ascending.
"""

from __future__ import annotations

import csv
import itertools
import json
import math
from pathlib import Path

import numpy as np

from jaxopt_rl.simulator.grid import GridConfig, GridPoint
from jaxopt_rl.simulator.metrics import NAMES, clipped_linear_fit

# diagnostic -> "low" (smaller is better), "high", or "mid" (closest to 0.5 is best)
ORDER = {"deviation": "low", "variance": "low", "steepness": "high", "q_raw": "high",
         "q_smooth": "high", "auc_raw": "mid", "auc_smooth": "mid"}
PANELS = ("deviation", "auc_raw", "auc_smooth", "q_raw", "q_smooth", "variance", "steepness")
TITLES = {"deviation": "deviation from y=x", "auc_raw": "AUC (raw)",
          "auc_smooth": "AUC (smoothed)", "q_raw": "monotonicity (raw)",
          "q_smooth": "monotonicity (smoothed)", "variance": "variance around trend",
          "steepness": "steepness S"}
_MAX_PANELS = 49


def goodness(name: str, values: np.ndarray) -> np.ndarray:
    """Higher is better, for sorting and colours."""
    values = np.asarray(values, np.float64)
    if ORDER[name] == "low":
        return -values
    if ORDER[name] == "high":
        return values
    return -np.abs(values - 0.5)


def flags(grid: GridConfig, diagnostics: dict[str, np.ndarray]) -> list[str]:
    out = []
    for auc, q in zip(diagnostics["auc_raw"], diagnostics["q_raw"]):
        marks = []
        if auc < grid.flags.sparse_below:
            marks.append("sparse")
        if auc > grid.flags.saturated_above:
            marks.append("saturated")
        if q < grid.flags.flat_below:
            marks.append("flat")
        out.append(",".join(marks))
    return out


def table_rows(grid: GridConfig, points: list[GridPoint], result, rank_by: str) -> list[dict]:
    """One row per configuration, best first under `rank_by`."""
    marks = flags(grid, result.diagnostics)
    order = np.argsort(-goodness(rank_by, result.diagnostics[rank_by]), kind="stable")
    rows = []
    for rank, c in enumerate(order, 1):
        row = {"rank": rank, "config": points[c].label, "env": points[c].env.name}
        row.update({key: value for key, value in points[c].values.items()})
        row.update({name: float(result.diagnostics[name][c]) for name in NAMES})
        row["flags"] = marks[c]
        rows.append(row)
    return rows


def _fmt(value) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def write_tables(out_dir: Path, grid: GridConfig, rows: list[dict], header: dict) -> list[Path]:
    """`table.md`, `table.json`, `table.csv` under `out_dir`."""
    columns = list(rows[0])
    md = [f"# Simulator grid `{grid.name}`", "", grid.description, ""]
    md += [f"- {key}: {value}" for key, value in header.items()]
    md += ["", "| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    md += ["| " + " | ".join(_fmt(row[c]) for c in columns) + " |" for row in rows]
    paths = [out_dir / "table.md", out_dir / "table.json", out_dir / "table.csv"]
    paths[0].write_text("\n".join(md) + "\n")
    paths[1].write_text(json.dumps({"grid": grid.name, **header, "rows": rows}, indent=1))
    with open(paths[2], "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=columns)
        writer.writeheader()
        writer.writerows(rows)
    return paths


def write_curves(out_dir: Path, points: list[GridPoint], result) -> Path:
    path = out_dir / "curves.json"
    path.write_text(json.dumps({
        "x": result.x_X.tolist(),
        "curves": {p.label: [None if math.isnan(v) else float(v) for v in result.curve_CX[c]]
                   for c, p in enumerate(points)},
    }))
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(path: Path, grid: GridConfig, points: list[GridPoint], result,
                rank_by: str) -> Path:
    """Small multiples of the curves (with the clipped-linear fit and y = x); at most 49
    panels: the best under `rank_by` when the grid is larger."""
    plt = _plt()
    chosen = list(range(len(points)))
    if len(chosen) > _MAX_PANELS:
        chosen = list(np.argsort(-goodness(rank_by, result.diagnostics[rank_by]),
                                 kind="stable")[:_MAX_PANELS])
    cols = math.ceil(math.sqrt(len(chosen)))
    rows = math.ceil(len(chosen) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(2.2 * cols, 2.0 * rows), squeeze=False,
                             sharex=True, sharey=True)
    x = result.x_X
    curve = np.nan_to_num(result.curve_CX[chosen], nan=0.0)
    a, b = clipped_linear_fit(x, curve)
    for k, c in enumerate(chosen):
        ax = axes.flat[k]
        ax.plot(x, x, ":", color="0.6", lw=0.8)
        ax.plot(x, result.curve_CX[c], "-o", ms=2, lw=1.2, color="tab:blue")
        ax.plot(x, np.clip(a[k] * x + b[k], 0, 1), "--", lw=1.0, color="tab:red")
        d = result.diagnostics
        ax.set_title(f"{points[c].label}\nAUC {d['auc_raw'][c]:.2f} S {d['steepness'][c]:.2f}",
                     fontsize=6)
        ax.tick_params(labelsize=5)
        ax.set_ylim(-0.05, 1.05)
    for ax in axes.flat[len(chosen):]:
        ax.axis("off")
    fig.suptitle(f"{grid.name}: simulated pass rate vs sampled quality "
                 "(blue), clipped-linear fit (red), y = x (grey)", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)
    return path


def _relative(name: str, values: np.ndarray) -> np.ndarray:
    """Goodness scaled to [0, 1] within the panel, centred on yellow; a panel whose values
    span less than 0.1 keeps them close to yellow (a 0.01 spread is not red against green)."""
    score = goodness(name, values)
    low, high = np.nanmin(score), np.nanmax(score)
    return 0.5 + (score - 0.5 * (low + high)) / max(high - low, 0.1)


def _annotate(ax, values: np.ndarray) -> None:
    for (i, j), value in np.ndenumerate(values):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=5.5)


def plot_heatmaps(out_dir: Path, grid: GridConfig, points: list[GridPoint], result) -> list[Path]:
    """Figure 45's layout (module docstring); one file per combination of the other axes."""
    plt = _plt()
    rows_key, cols_key = grid.heatmap_axes
    others = [k for k in grid.axes if k not in (rows_key, cols_key)]
    paths = []
    for fixed in itertools.product(*(grid.axes[k] for k in others)):
        chosen = {k: v for k, v in zip(others, fixed)}
        index = {}
        for c, p in enumerate(points):
            if all(p.values[k] == v for k, v in chosen.items()):
                index[(p.values[rows_key], p.values.get(cols_key))] = c
        row_values = list(grid.axes[rows_key])
        col_values = list(grid.axes[cols_key]) if cols_key else [None]
        cell = np.array([[index[(r, q)] for q in col_values] for r in row_values])
        suffix = "".join(f"_{k.rsplit('.', 1)[-1]}={v}" for k, v in chosen.items())
        path = out_dir / f"heatmaps{suffix}.png"
        title = f"{grid.name}{suffix.replace('_', ' ')}"
        if cols_key is None:
            _one_axis(plt, path, title, rows_key, row_values, cell[:, 0], result)
        else:
            _two_axes(plt, path, title, (rows_key, row_values), (cols_key, col_values), cell,
                      result)
        paths.append(path)
    return paths


def _one_axis(plt, path, title, key, values, cell_R, result) -> None:
    shown = np.stack([result.diagnostics[n][cell_R] for n in PANELS], -1)
    colour = np.stack([_relative(n, result.diagnostics[n][cell_R]) for n in PANELS], -1)
    fig, ax = plt.subplots(figsize=(1.1 * len(PANELS) + 1.5, 0.35 * len(values) + 1.4))
    ax.imshow(colour, cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
    _annotate(ax, shown)
    ax.set_xticks(range(len(PANELS)), [TITLES[n] for n in PANELS], rotation=30, ha="right",
                  fontsize=6)
    ax.set_yticks(range(len(values)), [str(v) for v in values], fontsize=6)
    ax.set_ylabel(key, fontsize=7)
    ax.set_title(f"{title}: colours relative within each column", fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


def _two_axes(plt, path, title, rows, cols, cell_RQ, result) -> None:
    (rows_key, row_values), (cols_key, col_values) = rows, cols
    per_row = 4  # 7 panels on two rows: wide grids stay readable
    width, height = 0.42 * len(col_values) + 1.2, 0.34 * len(row_values) + 1.3
    fig, axes = plt.subplots(2, per_row, figsize=(width * per_row, 2 * height + 0.4),
                             squeeze=False)
    for ax, name in zip(axes.flat, PANELS):
        values = result.diagnostics[name][cell_RQ]
        ax.imshow(_relative(name, values), cmap="RdYlGn", vmin=0, vmax=1, aspect="auto")
        _annotate(ax, values)
        ax.set_title(TITLES[name], fontsize=8)
        ax.set_xticks(range(len(col_values)), [str(v) for v in col_values], rotation=90,
                      fontsize=6)
        ax.set_yticks(range(len(row_values)), [str(v) for v in row_values], fontsize=6)
        ax.set_xlabel(cols_key, fontsize=6)
        ax.set_ylabel(rows_key, fontsize=6)
    for ax in axes.flat[len(PANELS):]:
        ax.axis("off")
    fig.suptitle(f"{title}: colours relative within each panel (green = better end)",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    plt.close(fig)


__all__ = ["ORDER", "PANELS", "flags", "goodness", "plot_curves", "plot_heatmaps",
           "table_rows", "write_curves", "write_tables"]
