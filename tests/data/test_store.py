"""Dataset store: what the build writes loads back; recipe tests materialise byte-for-byte."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from jaxopt_rl.data.builder.execution import Executor
from jaxopt_rl.data.materialize import MaterializeError, materialize, materialize_problem
from jaxopt_rl.data.store import load_dataset, sha256_text
from tests.data.fakes import SubprocessSandbox


@pytest.fixture(scope="module")
def materialized(built_dataset, tmp_path_factory):
    root = tmp_path_factory.mktemp("copy") / "ds"
    shutil.copytree(built_dataset.output_dir, root)
    sb = SubprocessSandbox(workers=2)
    try:
        errors = materialize(load_dataset(root), sb)
    finally:
        sb.close()
    assert errors == {}
    return load_dataset(root)


def test_layout_and_records(built_dataset):
    root = built_dataset.output_dir
    names = {p.name for p in root.iterdir()}
    assert {"manifest.json", "problems.jsonl", "tests.parquet", "solutions.jsonl",
            "durations.parquet", "funnel.json", "funnel.csv", "rejections.jsonl",
            "problem_stats.jsonl", "generators.jsonl"} <= names
    dataset = load_dataset(root)
    assert dataset.problem_ids() == ["sum-001", "sum-002"]
    assert sorted(dataset.problem_ids("train") + dataset.problem_ids("test")
                  + dataset.problem_ids("complement")) == ["sum-001", "sum-002"]
    record = dataset.record("sum-001")
    assert record.n_correct == 3 and record.n_incorrect >= 1
    assert record.n_tests["T0"] == 3 and record.n_tests["T+"] > 0 and record.n_tests["TO"] > 0
    assert set(record.robust_cv) == {"T0", "TO"}
    manifest = dataset.manifest
    assert manifest["format_version"] == 1
    assert "build" in manifest["timing_campaigns"]
    with pytest.raises(KeyError, match="nope"):
        dataset.record("nope")


def test_recipe_tests_need_materialising(built_dataset):
    dataset = load_dataset(built_dataset.output_dir)
    rows = dataset.test_rows("sum-001")
    recipes = [r for r in rows if not r["inline"]]
    assert recipes and all(r["input"] is None and r["kind"] != "T0" for r in recipes)
    assert all(r["char_len"] > 200 for r in recipes)
    with pytest.raises(FileNotFoundError, match="jaxopt-rl data materialize"):
        dataset.tests("sum-001")


def test_materialised_tests_match_digests_and_reference_times(materialized):
    for problem_id in materialized.problem_ids():
        tests = materialized.tests(problem_id)
        rows = {r["test_id"]: r for r in materialized.test_rows(problem_id)}
        for test in tests:
            assert sha256_text(test.input) == rows[test.test_id]["input_sha256"]
            assert sha256_text(test.expected) == rows[test.test_id]["expected_sha256"]
            assert test.char_len == rows[test.test_id]["char_len"]
        ref = materialized.reference_times(problem_id)
        assert ref.test_ids == tuple(t.test_id for t in tests)
        assert ref.num_references == materialized.record(problem_id).n_correct
        kinds = np.array([t.kind for t in tests])
        # Durations were traced on T0 and TO only (config), all by verified-correct references.
        assert ref.mask_TH[kinds == "T+"].sum() == 0
        assert ref.mask_TH[kinds == "TO"].all() and ref.mask_TH[kinds == "T0"].all()
        assert (ref.duration_TH[ref.mask_TH] > 0).all()
        problem = materialized.problem(problem_id)
        assert len(problem.generators) == 1 and problem.tests == tests


def test_reference_arrays_for_a_batch(materialized):
    ids = ["sum-002", "sum-001", "sum-002"]
    duration_PTH, mask_PTH = materialized.reference_arrays(ids)
    refs = [materialized.reference_times(p) for p in ids]
    assert duration_PTH.shape == (3, max(r.num_tests for r in refs), 3)
    for p, ref in enumerate(refs):
        np.testing.assert_array_equal(duration_PTH[p, :ref.num_tests], ref.duration_TH)
        assert not mask_PTH[p, ref.num_tests:].any()
    fixed, _ = materialized.reference_arrays(ids, num_tests=64, num_references=8)
    assert fixed.shape == (3, 64, 8)


def test_reference_record_rows_match_the_masked_durations(materialized):
    ref = materialized.reference_times("sum-001")
    rows = materialized.reference_record_rows("sum-001")
    assert len(rows) == int(ref.mask_TH.sum())
    for row in rows:
        j, h = ref.test_ids.index(row["test_id"]), ref.solution_ids.index(row["reference_id"])
        assert ref.mask_TH[j, h] and np.isclose(ref.duration_TH[j, h], row["duration_s"])
        assert row["row_type"] == "reference"


def test_tampered_generator_is_caught(materialized, tmp_path):
    root = tmp_path / "ds"
    shutil.copytree(materialized.root, root)
    shutil.rmtree(root / "materialized")
    lines = (root / "generators.jsonl").read_text().splitlines()
    row = json.loads(lines[0])
    row["source"] = row["source"].replace("randint(lo, 9)", "randint(lo, 8)")
    lines[0] = json.dumps(row)
    (root / "generators.jsonl").write_text("\n".join(lines) + "\n")
    dataset = load_dataset(root)
    sb = SubprocessSandbox(workers=2)
    executor = Executor(sb)
    try:
        with pytest.raises(MaterializeError, match=f"problem '{row['problem_id']}' test 'T"):
            materialize_problem(dataset, row["problem_id"], executor)
    finally:
        executor.close()
        sb.close()
    assert not dataset.materialized_path(row["problem_id"]).exists()


def test_bad_dataset_folders_are_named(tmp_path, built_dataset):
    with pytest.raises(FileNotFoundError, match=r"no manifest\.json"):
        load_dataset(tmp_path)
    root = tmp_path / "ds"
    shutil.copytree(built_dataset.output_dir, root)
    manifest = json.loads((root / "manifest.json").read_text())
    (root / "manifest.json").write_text(json.dumps({**manifest, "format_version": 99}))
    with pytest.raises(ValueError, match="format_version 99"):
        load_dataset(root)
    (root / "manifest.json").write_text(json.dumps(manifest))
    (root / "problems.jsonl").write_text('{"problem_id": "x"}\n')
    with pytest.raises(ValueError, match=r"problems\.jsonl:1: missing"):
        load_dataset(root)



def test_ensure_materialized_runs_once_on_first_use(built_dataset, tmp_path):
    """A fresh clone's first `jaxopt-rl train` must not ask for a manual step; the
    recipe tests are regenerated once and then served from the cache."""
    from jaxopt_rl.data.materialize import ensure_materialized

    root = tmp_path / "ds"
    shutil.copytree(built_dataset.output_dir, root)
    dataset = load_dataset(root)
    with pytest.raises(FileNotFoundError):
        dataset.tests("sum-001")
    lines = []
    sb = SubprocessSandbox(workers=2)
    try:
        assert ensure_materialized(dataset, sb, ["sum-001"], lines.append) == 1
        assert ensure_materialized(dataset, sb, ["sum-001"], lines.append) == 0  # cached
    finally:
        sb.close()
    assert len(lines) == 1 and "materialising the recipe tests of 1 problems" in lines[0]
    assert all(t.input is not None for t in dataset.tests("sum-001"))
