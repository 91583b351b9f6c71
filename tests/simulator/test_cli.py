"""`jaxopt-rl simulate` end to end on a small grid (3 + 4 environments, 6 steps)."""

import json

import yaml

from jaxopt_rl.cli import main


def test_simulate_writes_ranked_tables_curves_and_heatmaps(tmp_path, capsys):
    grid = {"name": "tiny", "description": "QP and ranked-worst smoke grid", "base": "qp_p30",
            "split": "test", "bands": {"steps": 6}, "window": 2,
            "axes": {"gates.quality_threshold": [0.1, 0.5, 1.0]}}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(grid))
    out = tmp_path / "out"
    assert main(["simulate", "--grid", str(path), "--out", str(out), "--rank-by", "q_raw"]) == 0
    printed = capsys.readouterr().out
    assert "tiny: 3 configurations" in printed
    names = {p.name for p in out.iterdir()}
    assert names == {"table.md", "table.json", "table.csv", "curves.json", "curves.png",
                     "heatmaps.png"}
    table = json.loads((out / "table.json").read_text())
    assert table["configurations"] == 3 and table["rank_by"] == "q_raw"
    q = [row["q_raw"] for row in table["rows"]]
    assert q == sorted(q, reverse=True)
    by_threshold = {row["gates.quality_threshold"]: row for row in table["rows"]}
    assert by_threshold[1.0]["auc_raw"] == 1.0 and "saturated" in by_threshold[1.0]["flags"]
    assert by_threshold[0.1]["auc_raw"] < by_threshold[0.5]["auc_raw"]
    curves = json.loads((out / "curves.json").read_text())
    assert len(curves["x"]) == 6 and len(curves["curves"]) == 3
    assert (out / "table.md").read_text().count("\n| ") >= 4
    for png in ("curves.png", "heatmaps.png"):
        assert (out / png).read_bytes()[:4] == b"\x89PNG"

    grid.update(name="tiny2", base="rw_p80",
                axes={"limit.percentile": [20.0, 80.0], "gates.timeout_tolerance": [0.0, 0.5]})
    path.write_text(yaml.safe_dump(grid))
    assert main(["simulate", "--grid", str(path), "--out", str(out / "two")]) == 0
    rows = json.loads((out / "two" / "table.json").read_text())["rows"]
    deviation = [row["deviation"] for row in rows]
    assert len(rows) == 4 and deviation == sorted(deviation)
    assert (out / "two" / "heatmaps.png").is_file()
