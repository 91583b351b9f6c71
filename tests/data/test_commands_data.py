"""`jaxopt-rl data` command line: stats output, and build errors that name the config key."""

from __future__ import annotations

import json

from jaxopt_rl.cli import main


def test_stats_command_writes_json_and_pngs(built_dataset, tmp_path, capsys):
    out = tmp_path / "stats"
    assert main(["data", "stats", str(built_dataset.output_dir), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "funnel" in printed and "sum-001" in printed
    stats = json.loads((out / "stats.json").read_text())
    assert stats["splits"] and (out / "durations_by_kind.png").is_file()
    assert (out / "filterability.png").is_file()


def test_build_config_errors_are_reported_not_raised(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text("correctness_filter:\n  timeout_fraction: 2\n")
    assert main(["data", "build", str(config)]) == 2
    assert "correctness_filter.timeout_fraction" in capsys.readouterr().err


def test_stats_on_a_missing_dataset_is_a_clean_error(tmp_path, capsys):
    assert main(["data", "stats", str(tmp_path)]) == 2
    assert "no manifest.json" in capsys.readouterr().err
