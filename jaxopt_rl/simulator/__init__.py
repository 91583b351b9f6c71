"""The offline reward simulator (docs/design/simulator.md; paper Appendix E) and its diagnostics.

Stored reference executions stand in for the policy and the sandbox: every reference of every
problem is replayed, leave-one-out, through the online environment step (`jaxopt_rl.rewards`),
and the pass outcomes are weighed by quality band into one pass-rate curve per environment
configuration. Thousands of configurations run as a few compiled programs (one per
environment structure, vmapped over the numeric knobs).

  replay       stored runs of a dataset, quality scores, leave-one-out record batches
  bands        which references each step of a curve replays
  engine       `Simulator`: configurations -> curves, pass outcomes, diagnostics
  metrics      AUC, steepness, variance, deviation, quality correlation of curves
  grid         YAML grids (`configs/sim/*.yaml`) -> validated environment configurations
  report       ranked tables, curve and heatmap PNGs (`jaxopt-rl simulate`)

    from jaxopt_rl.simulator import diagnostics, load_grid, simulate_grid
    points, result = simulate_grid(load_grid("qp_threshold"))
    result.curve_CX, result.diagnostics["deviation"]

Dimension letters: C configurations, X steps (quality bands) of a curve, P problems,
T tests, H references, B rollouts of a replay batch.
"""

from jaxopt_rl.simulator.bands import BandConfig, band_weights, drawn_references
from jaxopt_rl.simulator.engine import SimulationResult, Simulator, pass_outcome_B
from jaxopt_rl.simulator.grid import GridConfig, grid_points, load_grid, simulate_grid
from jaxopt_rl.simulator.metrics import NAMES, clipped_linear_fit, diagnostics
from jaxopt_rl.simulator.replay import (
    StoredRuns,
    leave_one_out_records,
    load_stored_runs,
    quality_scores,
)

__all__ = [
    "NAMES",
    "BandConfig",
    "GridConfig",
    "SimulationResult",
    "Simulator",
    "StoredRuns",
    "band_weights",
    "clipped_linear_fit",
    "diagnostics",
    "drawn_references",
    "grid_points",
    "leave_one_out_records",
    "load_grid",
    "load_stored_runs",
    "pass_outcome_B",
    "quality_scores",
    "simulate_grid",
]
