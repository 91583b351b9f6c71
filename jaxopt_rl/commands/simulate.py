"""`jaxopt-rl simulate`: screen a grid of environment configurations offline.

    jaxopt-rl simulate --grid configs/sim/qp_threshold.yaml [--out DIR] [--rank-by deviation]
                       [--top N]

Loads the grid (`jaxopt_rl.simulator.grid`; a name under configs/sim or a YAML path), builds
and validates every configuration (a bad grid exits with status 2 and one line naming the
key), replays the dataset's stored reference runs through every configuration with a progress
bar, prints the best `--top` rows, and writes under `--out` (default `runs/sim/<grid name>`):

  table.md / table.json / table.csv   diagnostics per configuration, ranked by --rank-by
  curves.json                         the simulated curves
  curves.png                          the curves with their clipped-linear fits
  heatmaps*.png                       the diagnostics in the layout of the paper's Figure 45
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

HELP = "Screen a grid of reward environments with the offline simulator (stored durations)."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from jaxopt_rl.simulator.metrics import NAMES

    parser.add_argument("--grid", required=True,
                        help="grid: a name under configs/sim (e.g. qp_threshold) or a YAML path")
    parser.add_argument("--out", type=Path, help="output folder (default runs/sim/<grid name>)")
    parser.add_argument("--rank-by", choices=NAMES, default=None,
                        help="diagnostic that orders the table (default: the grid's rank_by)")
    parser.add_argument("--top", type=int, default=15, help="rows to print (default 15)")


def run(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn
    from rich.table import Table

    from jaxopt_rl.simulator import report
    from jaxopt_rl.simulator.grid import grid_points, load_grid, load_grid_runs, simulate_grid

    grid = load_grid(args.grid)
    rank_by = args.rank_by or grid.rank_by
    total = len(grid_points(grid))  # validates every point before any work
    out_dir = args.out if args.out is not None else Path("runs") / "sim" / grid.name
    out_dir.mkdir(parents=True, exist_ok=True)
    console = Console(width=None if Console().is_terminal else 150)
    start = time.perf_counter()
    runs = load_grid_runs(grid)
    with Progress("[progress.description]{task.description}", BarColumn(),
                  MofNCompleteColumn(), TimeElapsedColumn(), console=console,
                  transient=True) as progress:
        task = progress.add_task(f"simulating {grid.name}", total=total)
        points, result = simulate_grid(grid, runs=runs,
                                       progress=lambda n: progress.advance(task, n))
    seconds = time.perf_counter() - start
    rows = report.table_rows(grid, points, result, rank_by)
    p = runs.shape[0]
    header = {"base": grid.base, "dataset": grid.dataset, "split": grid.split or "all",
              "problems": p, "references": int(runs.reference_PH.sum()),
              "configurations": len(points), "structures": result.num_structures,
              "steps": grid.bands.steps, "sampling": grid.bands.sampling,
              "window": grid.window, "rank_by": rank_by, "seconds": round(seconds, 2)}
    written = report.write_tables(out_dir, grid, rows, header)
    written.append(report.write_curves(out_dir, points, result))
    written.append(report.plot_curves(out_dir / "curves.png", grid, points, result, rank_by))
    written += report.plot_heatmaps(out_dir, grid, points, result)

    table = Table(title=f"{grid.name}: {len(points)} configurations in {seconds:.1f} s "
                        f"({result.num_structures} compiled structures), ranked by {rank_by}")
    columns = ["rank", "config", *report.PANELS, "flags"]
    short = {"deviation": "D", "auc_raw": "AUC", "auc_smooth": "AUC~", "q_raw": "Q",
             "q_smooth": "Q~", "variance": "V", "steepness": "S"}
    for column in columns:
        table.add_column(short.get(column, column), no_wrap=column == "config",
                         justify="left" if column in ("config", "flags") else "right")
    for row in rows[:args.top]:
        table.add_row(*(f"{row[c]:.3f}" if isinstance(row[c], float) else str(row[c])
                        for c in columns))
    console.print(table)
    console.print(f"wrote {', '.join(str(p) for p in written)}")
    return 0
