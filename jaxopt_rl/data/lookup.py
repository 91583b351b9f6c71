"""A built data set found by the name a config or a command line gives it: ``"mini"`` (the
shipped DMC-Optim-mini, `jaxopt_rl.data.mini`) or the folder of a built data set. Every caller
that turns such a name into a `store.Dataset` goes through `find_data_set`, so the names mean
the same everywhere and a missing data set is refused with the same line (`missing_data_set`
gives that line without loading, for a config checked before it runs).

    from jaxopt_rl.data.lookup import find_data_set
    dataset = find_data_set("mini")                      # or "runs/data/dmc_optim"
    dataset = find_data_set(name, command_cache_dir(name))   # recipe tests under runs/cache/
    dataset = find_data_set(config.data.dataset, key="data.dataset")   # errors name the key
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


def missing_data_set(name: str) -> str | None:
    """Why `name` names no built data set, in the line `find_data_set` refuses it with; None
    when it names one. For a config that is checked before anything loads."""
    from jaxopt_rl.data.mini import MINI_CONFIG

    root = data_set_root(name)
    if (root / "manifest.json").is_file():
        return None
    if name == MINI:
        return (f"DMC-Optim-mini is not built at {root}; build it with "
                f"`jaxopt-rl data build {MINI_CONFIG}`")
    return f"{name!r} is neither 'mini' nor a built data set folder (no manifest.json in {root})"


def find_data_set(name: str, cache_dir: str | Path | None = None, *, key: str | None = None):
    """The `Dataset` named `name`; materialised recipe tests go under `cache_dir` (default:
    ``materialized/`` in the data set folder). FileNotFoundError names what is missing, headed
    by `key` when given: the config key or option the name came from (``data.dataset``)."""
    from jaxopt_rl.data.store import Dataset

    missing = missing_data_set(name)
    if missing is not None:
        raise FileNotFoundError(missing if key is None else f"{key}={name!r}: {missing}")
    return Dataset(data_set_root(name), cache_dir)
