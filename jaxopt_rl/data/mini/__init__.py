"""DMC-Optim-mini: a small hand-written benchmark in the DMC-Optim format, shipped with the package.

    sources/<problem_id>/    problem.yaml, generator.py, solutions/{correct,incorrect}_*.py
                             (the source format; see docs/guides/data.md)
    score_tasks/<task_id>/   score-based (RiVER) tasks: task.yaml, generator.py, checker.py,
                             heuristics/*.py
    built/                   the built dataset (`jaxopt-rl data build configs/data/mini.yaml`)

    from jaxopt_rl.data.mini import load_mini
    dataset = load_mini()                       # jaxopt_rl.data.store.Dataset
    dataset.problem_ids("train")
    tasks = load_score_tasks()                  # list[jaxopt_rl.data.score_tasks.ScoreTask]
"""

from __future__ import annotations

from pathlib import Path

_HERE = Path(__file__).resolve().parent
MINI_CONFIG = "configs/data/mini.yaml"


def mini_sources_dir() -> Path:
    """Folder of the problem sources (one sub-folder per problem)."""
    return _HERE / "sources"


def mini_score_tasks_dir() -> Path:
    """Folder of the score-based tasks (one sub-folder per task)."""
    return _HERE / "score_tasks"


def mini_built_dir() -> Path:
    """Folder of the committed built dataset."""
    return _HERE / "built"


def mini_problem_ids() -> list[str]:
    """Ids of the problem source folders present (built or not)."""
    root = mini_sources_dir()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / "problem.yaml").is_file())


def load_mini(path: str | Path | None = None):
    """The built DMC-Optim-mini dataset (default: the committed `built/` folder)."""
    from jaxopt_rl.data.store import Dataset

    root = Path(path) if path is not None else mini_built_dir()
    if not (root / "manifest.json").is_file():
        raise FileNotFoundError(
            f"DMC-Optim-mini is not built at {root}; build it with "
            f"`jaxopt-rl data build {MINI_CONFIG}` (writes {mini_built_dir()})")
    return Dataset(root)


def load_score_tasks():
    """The score-based tasks (`jaxopt_rl.data.score_tasks.ScoreTask`), validated, by id."""
    from jaxopt_rl.data.score_tasks import read_score_tasks

    return read_score_tasks(mini_score_tasks_dir())


__all__ = ["load_mini", "load_score_tasks", "mini_built_dir", "mini_problem_ids", "mini_score_tasks_dir",
           "mini_sources_dir"]
