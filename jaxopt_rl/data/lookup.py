"""A built data set found by the name a config or a command line gives it: ``"mini"`` (the
shipped DMC-Optim-mini, `jaxopt_rl.data.mini`) or the folder of a built data set. Every caller
that turns such a name into a `store.Dataset` goes through `find_data_set`, so the names mean
the same everywhere and a missing data set is refused with the same line.

    from jaxopt_rl.data.lookup import find_data_set
    dataset = find_data_set("mini")                      # or "runs/data/dmc_optim"
    dataset = find_data_set(name, command_cache_dir(name))   # recipe tests under runs/cache/
"""

from __future__ import annotations

from pathlib import Path

MINI = "mini"


def data_set_root(name: str) -> Path:
    """The folder a data set name stands for (whether or not a data set is built there)."""
    from jaxopt_rl.data.mini import mini_built_dir

    return mini_built_dir() if name == MINI else Path(name)


def command_cache_dir(name: str) -> Path:
    """Where the command-line tools (eval, calibrate, study) materialise a data set's recipe
    tests unless told otherwise: ``runs/cache/<mini or the folder's name>``, outside the data set
    folder, so that evaluating a shared or read-only data set never writes into it."""
    return Path("runs") / "cache" / (MINI if name == MINI else data_set_root(name).name)


def find_data_set(name: str, cache_dir: str | Path | None = None):
    """The `Dataset` named `name`; materialised recipe tests go under `cache_dir` (default:
    ``materialized/`` in the data set folder). FileNotFoundError names what is missing."""
    from jaxopt_rl.data.mini import MINI_CONFIG
    from jaxopt_rl.data.store import Dataset

    root = data_set_root(name)
    if not (root / "manifest.json").is_file():
        if name == MINI:
            raise FileNotFoundError(f"DMC-Optim-mini is not built at {root}; build it with "
                                    f"`jaxopt-rl data build {MINI_CONFIG}`")
        raise FileNotFoundError(f"{name!r} is neither 'mini' nor a built data set folder (no "
                                f"manifest.json in {root})")
    return Dataset(root, cache_dir)
