"""`train` on a fresh copy of a data set (its git-tracked files only: no recipe tests
materialised yet) materialises them itself in the sandbox during `setup_run`, instead of asking
for `jaxopt-rl data materialize` first."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from jaxopt_rl.data.lookup import find_data_set
from jaxopt_rl.training.config import load_train_config
from jaxopt_rl.training.setup import setup_run

ROOT = Path(__file__).resolve().parents[2]
MINI = "jaxopt_rl/data/mini/built"


def _fresh_copy(dest: Path) -> Path:
    """The data set's folder as a clone has it (the tracked files; no ``materialized/``)."""
    tracked = subprocess.run(["git", "ls-files", MINI], cwd=ROOT, capture_output=True,
                             text=True, check=True).stdout.split()
    assert "manifest.json" in {Path(name).name for name in tracked}
    for name in tracked:
        target = dest / Path(name).relative_to(MINI)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return dest


def test_setup_of_a_shipped_train_config_materialises_a_fresh_data_sets_tests(tmp_path):
    data = _fresh_copy(tmp_path / "mini")
    assert not (data / "materialized").exists()
    config = load_train_config(ROOT / "configs/train/tiny_qp_p30.yaml", [
        f"data.dataset={data}", f"output_dir={tmp_path / 'run'}", "data.problems=[mini-002]",
        "rollout.references=stored",  # one problem, no re-timing: only the set-up is tested
        "grpo.rows=16"])  # split over the 8 fake CPU devices of the test session
    lines: list[str] = []
    run = setup_run(config, log=lines.append)
    run.close()
    assert any(line.startswith("materialising the recipe tests of 1 problems") for line in lines)
    assert [p.name for p in (data / "materialized").iterdir()] == ["mini-002.parquet"]
    assert len(find_data_set(str(data)).tests("mini-002")) > 0  # read without any error
