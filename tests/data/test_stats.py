"""Dataset statistics against hand computations on a built dataset; PNGs are written."""

from __future__ import annotations

import numpy as np
import pyarrow.parquet as pq

from jaxopt_rl.data.stats import (
    dataset_stats,
    plot_duration_histograms,
    plot_filterability,
    timing_table,
)
from jaxopt_rl.data.store import load_dataset


def test_timing_table_matches_a_direct_computation(built_dataset):
    dataset = load_dataset(built_dataset.output_dir)
    rows = dataset.duration_rows()
    kind = {(r["problem_id"], r["test_id"]): r["kind"]
            for r in pq.read_table(dataset.root / "tests.parquet").to_pylist()}
    table = {row["kind"]: row for row in timing_table(dataset)}
    assert set(table) == {"T0", "TO"}  # the config traced T0 and TO only
    for k in ("T0", "TO"):
        values = np.array([r["duration_s"] for r in rows
                           if kind[(r["problem_id"], r["test_id"])] == k
                           and r["status"] in ("success", "timeout")])
        assert table[k]["durations"] == values.size
        assert np.isclose(table[k]["mean_s"], values.mean())
        assert np.isclose(table[k]["p90_s"], np.percentile(values, 90))
        assert table[k]["share_over_1s"] == (values > 1).mean()
        assert table[k]["problems"] == 2


def test_dataset_stats_and_plots(built_dataset, tmp_path):
    dataset = load_dataset(built_dataset.output_dir)
    stats = dataset_stats(dataset)
    assert stats["funnel"][0]["stage"] == "00_load" and stats["funnel"][0]["problems"] == 2
    assert sum(stats["splits"].values()) == 2
    assert [p["problem_id"] for p in stats["problems"]] == ["sum-001", "sum-002"]
    assert stats["duration_filterable"] == sum(p["duration_filterable"] for p in stats["problems"])
    for plot in (plot_duration_histograms(dataset, tmp_path / "h.png"),
                 plot_filterability(dataset, tmp_path / "cv.png")):
        assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_augmentation_diagnostics_are_ordered_as_test_removal_implies(built_dataset):
    aug = dataset_stats(load_dataset(built_dataset.output_dir))["augmentation"]
    assert aug["problems"] == 2
    # More tests can only catch more negatives; removing tests can only let more pass.
    assert aug["false_positive_t0"] >= aug["false_positive_raw"]
    assert aug["false_positive_filtered"] >= aug["false_positive_raw"]
    assert aug["correct_pass_filtered"] >= aug["correct_pass_raw"]
    assert aug["false_positive_t0"] == 0.5  # SUM_WRONG_BIG passes T0, SUM_WRONG_FIRST does not
