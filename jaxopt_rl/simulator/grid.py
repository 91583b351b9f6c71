"""Simulator grids: a YAML file naming a base environment and the axes to sweep.

    name: abs_filter_x_abs_limit
    description: ...
    base: abs_2s                  # an environment (configs/env/<name>.yaml) or a YAML path
    dataset: mini                 # DMC-Optim-mini's committed build, or a built dataset folder
    split: null                   # train | test | complement | null (all problems)
    window: 5                     # moving-average window of the diagnostics
    bands: {steps: 21, sampling: expected}           # bands.BandConfig
    fixed: {gates.timeout_tolerance: 0.1}            # set on every point
    axes:                                            # the grid: their cartesian product
      filter.threshold_s: [10, 5, 2, 1, 0.5, 0.2, 0.1]
      limit.limit_s: [10, 5, 2, 1, 0.5, 0.2, 0.1]
    heatmap: {rows: filter.threshold_s, cols: limit.limit_s}   # default: the first two axes
    rank_by: deviation            # the table's default order (one of diagnostics.NAMES)
    flags: {sparse_below: 0.2, saturated_above: 0.8, flat_below: 0.3}

Axis and fixed keys are dotted `EnvConfig` keys (the `key=value` override keys of
`jaxopt-rl rewards`). Every point is built and validated as an `EnvConfig`, so a bad grid fails
before anything runs, with one line naming the key: an unknown grid key, an empty axis, an
unknown environment key, or a value outside the kernel's domain (e.g.
`gates.quality_threshold: 30`, a percent where a fraction is expected).

Flags (choice: the paper names the regimes, not the cut-offs): a configuration is *sparse*
when its raw AUC is below `sparse_below`, *saturated* above `saturated_above`, *flat* when its
raw quality correlation is below `flat_below`.
"""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path
from typing import Any

from jaxopt_rl.config import ConfigError, from_dict, load_yaml, require
from jaxopt_rl.data.lookup import find_data_set, missing_data_set
from jaxopt_rl.rewards.env_config import EnvConfig, resolve_env_path
from jaxopt_rl.simulator.bands import BandConfig
from jaxopt_rl.simulator.metrics import NAMES

_REPO_SIM_DIR = Path(__file__).resolve().parents[2] / "configs" / "sim"


@dataclasses.dataclass(frozen=True)
class HeatmapConfig:
    rows: str
    cols: str | None = None


@dataclasses.dataclass(frozen=True)
class FlagConfig:
    sparse_below: float = 0.2
    saturated_above: float = 0.8
    flat_below: float = 0.3


@dataclasses.dataclass(frozen=True)
class GridConfig:
    """One simulator grid (see the module docstring)."""

    name: str
    base: str
    axes: dict[str, tuple[Any, ...]]
    description: str = ""
    dataset: str = "mini"
    split: str | None = None
    window: int = 5
    bands: BandConfig = dataclasses.field(default_factory=BandConfig)
    fixed: dict[str, Any] = dataclasses.field(default_factory=dict)
    heatmap: HeatmapConfig | None = None
    rank_by: str = "deviation"
    flags: FlagConfig = dataclasses.field(default_factory=FlagConfig)

    def __post_init__(self) -> None:
        require(bool(self.name.strip()), "name", "must not be empty")
        require(bool(self.axes), "axes", "needs at least one axis")
        for key, values in self.axes.items():
            require(len(values) > 0, f"axes.{key}", "is empty: list at least one value")
            require(len(set(map(repr, values))) == len(values), f"axes.{key}",
                    f"lists a value twice: {list(values)}")
            require(key not in self.fixed, f"axes.{key}", "is also in fixed")
        missing = missing_data_set(self.dataset)
        require(missing is None, "dataset", str(missing))
        require(self.rank_by in NAMES, "rank_by",
                f"{self.rank_by!r} is not one of {', '.join(NAMES)}")
        require(self.split in (None, "train", "test", "complement"), "split",
                f"{self.split!r} is not one of train, test, complement, null")
        require(1 <= self.window <= self.bands.steps, "window",
                f"must be in [1, bands.steps={self.bands.steps}], got {self.window}")
        if self.heatmap is not None:
            for role in ("rows", "cols"):
                key = getattr(self.heatmap, role)
                require(key is None or key in self.axes, f"heatmap.{role}",
                        f"{key!r} is not an axis ({', '.join(self.axes)})")

    @property
    def heatmap_axes(self) -> tuple[str, str | None]:
        if self.heatmap is not None:
            return self.heatmap.rows, self.heatmap.cols
        keys = list(self.axes)
        return keys[0], keys[1] if len(keys) > 1 else None


@dataclasses.dataclass(frozen=True)
class GridPoint:
    label: str  # "threshold_s=2 limit_s=0.5"
    values: dict[str, Any]  # axis key -> value
    env: EnvConfig


def resolve_grid_path(name_or_path: str | Path) -> Path:
    """`qp_threshold` -> `configs/sim/qp_threshold.yaml`; an existing path is kept."""
    path = Path(name_or_path)
    if path.is_file():
        return path
    for directory in (Path("configs") / "sim", _REPO_SIM_DIR):
        candidate = directory / f"{name_or_path}.yaml"
        if candidate.is_file():
            return candidate
    raise ConfigError(f"grid file not found: {name_or_path}")


def load_grid(name_or_path: str | Path) -> GridConfig:
    path = resolve_grid_path(name_or_path)
    try:
        return from_dict(GridConfig, load_yaml(path))
    except ConfigError as err:
        raise ConfigError(f"{path}: {err}") from None


def _set(data: dict, dotted: str, value: Any) -> None:
    node = data
    parts = dotted.split(".")
    for depth, part in enumerate(parts[:-1]):
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{'.'.join(parts[:depth + 1])}: is not a section, cannot set "
                              f"{dotted}")
        node = child
    node[parts[-1]] = value


def _labels(keys: list[str]) -> list[str]:
    """Short axis names (the last dotted part) unless two axes would share one."""
    short = [key.rsplit(".", 1)[-1] for key in keys]
    return short if len(set(short)) == len(short) else keys


def grid_points(grid: GridConfig) -> list[GridPoint]:
    """Every point of the grid as a validated `EnvConfig` (ConfigError names the bad key)."""
    try:
        base = load_yaml(resolve_env_path(grid.base))
    except ConfigError as err:
        raise ConfigError(f"base: {err}") from None
    keys = list(grid.axes)
    short = _labels(keys)
    points = []
    for combo in itertools.product(*(grid.axes[k] for k in keys)):
        values = dict(zip(keys, combo))
        label = " ".join(f"{s}={v}" for s, v in zip(short, combo))
        data = _copy(base)
        for key, value in grid.fixed.items():
            _set_named(data, key, value, f"fixed.{key}")
        for key, value in values.items():
            _set_named(data, key, value, f"axes.{key}")
        data["name"] = f"{grid.name}[{label}]"
        try:
            env = from_dict(EnvConfig, data)
        except ConfigError as err:
            where = ", ".join(f"axes.{k}={v!r}" for k, v in values.items())
            raise ConfigError(f"{err} (base {grid.base}, at {where})") from None
        points.append(GridPoint(label=label, values=values, env=env))
    return points


def _copy(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: _copy(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_copy(v) for v in data]
    return data


def _set_named(data: dict, key: str, value: Any, name: str) -> None:
    try:
        _set(data, key, value)
    except ConfigError as err:
        raise ConfigError(f"{name}: {err}") from None


def load_grid_runs(grid: GridConfig):
    """The stored reference runs a grid simulates (`replay.StoredRuns`)."""
    from jaxopt_rl.simulator.replay import load_stored_runs

    try:
        dataset = find_data_set(grid.dataset)
    except FileNotFoundError as err:
        raise ConfigError(f"dataset: {err}") from None
    ids = dataset.problem_ids(grid.split)
    require(bool(ids), "split", f"dataset {dataset.root} has no {grid.split} problems")
    return load_stored_runs(dataset, ids)


def simulate_grid(grid: GridConfig, progress=None, runs=None):
    """`(points, SimulationResult)` of every point of `grid` (`progress(n)`: see
    `Simulator.run`). `runs`: stored runs already loaded for this grid's dataset and split."""
    from jaxopt_rl.simulator.engine import Simulator

    points = grid_points(grid)
    runs = load_grid_runs(grid) if runs is None else runs
    simulator = Simulator(runs, grid.bands, grid.window)
    return points, simulator.run([p.env for p in points], progress=progress)


__all__ = ["FlagConfig", "GridConfig", "GridPoint", "HeatmapConfig", "grid_points", "load_grid",
           "load_grid_runs", "resolve_grid_path", "simulate_grid"]
