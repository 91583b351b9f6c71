"""Simulator grids: shipped grids load; bad grids fail with one line naming the key."""

from pathlib import Path

import pytest
import yaml

from jaxopt_rl.cli import main
from jaxopt_rl.config import ConfigError
from jaxopt_rl.rewards.env_numbers import structure
from jaxopt_rl.simulator import grid_points, load_grid

SIM_DIR = Path(__file__).resolve().parents[2] / "configs" / "sim"
GRIDS = sorted(SIM_DIR.glob("*.yaml"))


def test_shipped_grids_expand_and_document_themselves():
    assert {p.stem for p in GRIDS} >= {"abs_filter_limit", "ranked_worst_tolerance",
                                       "qp_threshold", "qar_threshold", "compositions"}
    for path in GRIDS:
        grid = load_grid(path)
        assert grid.name == path.stem and grid.description
        points = grid_points(grid)
        size = 1
        for values in grid.axes.values():
            size *= len(values)
        assert len(points) == size
        assert len({p.env for p in points}) == size  # every point is a distinct environment
        header = [line for line in path.read_text().splitlines() if line.startswith("#")]
        assert any("Paper:" in line for line in header)
        assert any(line.startswith("# Run: jaxopt-rl simulate --grid") for line in header)


def test_numeric_axes_share_one_structure():
    points = grid_points(load_grid(SIM_DIR / "abs_filter_limit.yaml"))
    assert len({structure(p.env) for p in points}) == 1
    points = grid_points(load_grid(SIM_DIR / "compositions.yaml"))
    assert len({structure(p.env) for p in points}) == len(points)


BASE = {"name": "g", "base": "qp_p30", "axes": {"gates.quality_threshold": [0.1, 0.5]}}


def with_(**changes):
    data = {**BASE, **changes}
    return {k: v for k, v in data.items() if v is not None}


@pytest.mark.parametrize("data, key", [
    (with_(colour="red"), "colour"),
    (with_(axes={}), "axes"),
    (with_(axes={"gates.quality_threshold": []}), "axes.gates.quality_threshold"),
    (with_(axes={"gates.quality_threshold": [0.1, 0.1]}), "axes.gates.quality_threshold"),
    (with_(axes={"gates.quality_treshold": [0.1]}), "gates.quality_treshold"),
    (with_(axes={"gates.quality_threshold": [30]}), "gates.quality_threshold"),
    (with_(axes={"limit.limit_s": [-1.0]}), "limit.limit_s"),
    (with_(base="abs_2s", axes={"limit.limit_s": [0.5, 0.0]}), "limit.limit_s"),
    (with_(base="rw_p80", axes={"limit.percentile": [0, 50]}), "limit.percentile"),
    (with_(base="abs_2s", axes={"gates.timeout_tolerance": [1.5]}),
     "gates.timeout_tolerance"),
    (with_(axes={"composition.mapping": ["cubic"]}), "composition.mapping"),
    (with_(fixed={"filter.kind": "abs"}), "filter.threshold_s"),
    (with_(heatmap={"rows": "limit.limit_s"}), "heatmap.rows"),
    (with_(rank_by="speed"), "rank_by"),
    (with_(window=40), "window"),
    (with_(bands={"steps": 1}), "bands.steps"),
    (with_(base="no_such_env"), "base: unknown environment 'no_such_env'"),
    (with_(dataset="/no/such/dataset"), "dataset"),
])
def test_bad_grid_names_the_key(tmp_path, capsys, data, key):
    path = tmp_path / "grid.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
        grid_points(load_grid(path))
    assert main(["simulate", "--grid", str(path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and key in err
    assert not (tmp_path / "out").exists()


def test_simulator_imports_only_rewards_data_and_libraries():
    """The simulator sits on the reward kernels and the data; never the trainer, sampler,
    model or sandbox (it replays what is stored)."""
    import ast

    package = Path(__file__).resolve().parents[2] / "jaxopt_rl" / "simulator"
    allowed = ("jaxopt_rl.rewards", "jaxopt_rl.data", "jaxopt_rl.config", "jaxopt_rl.simulator")
    for path in package.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            for name in names:
                if name.startswith(("jaxopt_rl", "sandbox_cluster")):
                    assert name.startswith(allowed), f"{path.name} imports {name}"
