"""Which step folders under ``OUT/checkpoints/`` are checkpoints a run may read, and which one it
resumes from: `examine` (one folder, before anything in it is read), `newest_checkpoint` (a
reader: export, eval), `find_resume` (a run).

A step folder is one of three things:

* sealed: Orbax committed it and `Checkpointer` then wrote its manifest (`jaxopt_rl.manifest`);
  it is read only if every file still has the size and SHA-256 the manifest records;
* committed but unsealed: Orbax's commit marker and the three items are there, no manifest
  (written before checkpoints carried one, or the process died between the commit and the
  seal); read with a warning, since nothing can check it;
* not a checkpoint: empty, foreign, or half-written (no commit marker, an item missing); skipped
  with a warning naming it.

A sealed folder that fails its manifest is refused with one line naming it, its first bad file
and the newest intact checkpoint; a resume with ``checkpoint.on_corrupt: previous`` resumes from
that one instead and says why in its first log line (`resume_message`).

Choices: the folders a resume passes over are moved to ``OUT/checkpoints.rejected/`` (kept for
a post-mortem, never deleted): the run writes their step numbers again, and Orbax counts every
numbered folder in ``checkpoints/`` as its own (a bogus newest one would make its retention
delete real checkpoints, and a save at that step fail). A reader (`newest_checkpoint`) moves
nothing. A folder that passed `examine` is not hashed again in the same process while its
files' sizes and modification times are unchanged (a resume reads its config, then its state).
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import NamedTuple

import jax

from jaxopt_rl.manifest import CheckpointError, ManifestMismatch, verify_manifest

CHECKPOINT_DIR = "checkpoints"
REJECTED_DIR = "checkpoints.rejected"  # beside CHECKPOINT_DIR, out of Orbax's sight
ITEMS = ("state", "data", "config")
COMMIT_MARKER = "commit_success.txt"  # Orbax writes it into a step folder just before its rename
STEP_METADATA = "_CHECKPOINT_METADATA"


class CheckpointWarning(UserWarning):
    """A step folder skipped or moved aside, or a checkpoint read without a manifest."""


class NotACheckpoint(CheckpointError):
    """A step folder that is not a committed checkpoint."""

    def __init__(self, folder: Path, problem: str):
        self.folder = folder
        super().__init__(f"{folder}: not a committed checkpoint ({problem})")


class Resume(NamedTuple):
    """The checkpoint a run resumes from; `note` says why newer ones were passed over."""

    step: int
    path: Path
    note: str | None = None


def committed_problem(path: Path) -> str | None:
    """Why step folder `path` is not a committed checkpoint (None: it is one)."""
    if not any(path.iterdir()):
        return "it is empty"
    if not (path / COMMIT_MARKER).is_file():
        return f"no {COMMIT_MARKER}, Orbax's commit marker"
    if not (path / STEP_METADATA).is_file():
        return f"no {STEP_METADATA}"
    for item in ITEMS:
        if not (path / item).is_dir():
            return f"no {item!r} item"
    return None


# folder -> (its files' names, sizes and mtimes when it passed `examine`, whether it was sealed)
_EXAMINED: dict[Path, tuple[tuple, bool]] = {}


def examine(path: Path) -> bool:
    """Check step folder `path` before anything in it is read: True when it matches its
    manifest, False (with a warning) when it is committed but unsealed. Raises
    `ManifestMismatch` when it fails its manifest, `NotACheckpoint` when it is not a committed
    checkpoint."""
    path = Path(path).absolute()
    if not path.is_dir():
        raise NotACheckpoint(path, "no such folder")
    signature = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns)
                      for p in sorted(path.rglob("*")) if p.is_file())
    if path in _EXAMINED and _EXAMINED[path][0] == signature:
        return _EXAMINED[path][1]
    sealed = verify_manifest(path)
    if not sealed:
        problem = committed_problem(path)
        if problem is not None:
            raise NotACheckpoint(path, problem)
        warnings.warn(f"{path} has no manifest (written before checkpoints carried one, or the "
                      "run stopped between Orbax's commit and the seal): read unverified",
                      CheckpointWarning, stacklevel=2)
    _EXAMINED[path] = (signature, sealed)
    return sealed


def step_folders(directory: Path) -> list[Path]:
    """The numbered folders of a ``checkpoints/`` folder, newest first."""
    directory = Path(directory).absolute()
    if not directory.is_dir():
        return []
    steps = [int(p.name) for p in directory.iterdir() if p.is_dir() and p.name.isdigit()]
    return [directory / str(step) for step in sorted(steps, reverse=True)]


def refusal(err: ManifestMismatch, directory: Path) -> str:
    """One line: the checkpoint that failed, its first bad file, the newest intact one."""
    intact, _ = _newest_usable(directory, skip=Path(err.folder).absolute())
    if intact is None:
        return f"{err}; no intact checkpoint is left in {Path(directory).absolute()}"
    return f"{err}; the newest intact checkpoint is {intact}"


def newest_checkpoint(directory: Path) -> int:
    """The newest checkpoint's step in a ``checkpoints/`` folder, for a reader (export, eval):
    folders that are not committed checkpoints are skipped with a warning; a newest one that
    fails verification is refused (`CheckpointError`)."""
    directory = Path(directory).absolute()
    intact, rejected = _newest_usable(directory)
    for err in rejected:
        if isinstance(err, ManifestMismatch):
            raise CheckpointError(refusal(err, directory))
        warnings.warn(f"{err}; skipped", CheckpointWarning, stacklevel=2)
    if intact is None:
        raise FileNotFoundError(f"no checkpoint in {directory}")
    return int(intact.name)


def find_resume(output_dir: str | Path, on_corrupt: str = "fail") -> Resume | None:
    """The checkpoint a run in `output_dir` resumes from: the newest committed one that passes
    `examine`, or None (a fresh run).

    A newer one that fails verification is refused (`CheckpointError` naming the newest intact
    one) unless `on_corrupt` is "previous"; then the run resumes from the intact one and
    `Resume.note` says why. See the module doc for the folders passed over."""
    directory = Path(output_dir).absolute() / CHECKPOINT_DIR
    intact, rejected = _newest_usable(directory)
    corrupt = [err for err in rejected if isinstance(err, ManifestMismatch)]
    if corrupt and (intact is None or on_corrupt != "previous"):
        for err in rejected:
            if not isinstance(err, ManifestMismatch):
                warnings.warn(f"{err}; skipped", CheckpointWarning, stacklevel=2)
        if intact is None:
            raise CheckpointError(f"{corrupt[0]}; no intact checkpoint is left in {directory} "
                                  "(resume from a copy, or start a new output_dir)")
        raise CheckpointError(f"{corrupt[0]}; the newest intact checkpoint is {intact} "
                              "(checkpoint.on_corrupt=previous resumes from it)")
    _move_aside(rejected, directory.parent / REJECTED_DIR)
    if intact is None:
        return None
    note = None
    if corrupt:
        first = corrupt[0]
        note = f"step {first.folder.name} failed verification: {first.item} {first.reason}"
        if len(corrupt) > 1:
            note += f"; {len(corrupt) - 1} more after step {intact.name} failed too"
    return Resume(int(intact.name), intact, note)


def resume_message(step: int, path: Path, note: str | None = None) -> str:
    """The first log line of a resumed run."""
    return f"resumed from step {step} of {path}" + (f" ({note})" if note else "")


def _newest_usable(directory: Path, skip: Path | None = None
                   ) -> tuple[Path | None, list[CheckpointError]]:
    """The newest step folder that passes `examine` (None: none does), and why each newer one
    did not, newest first."""
    rejected: list[CheckpointError] = []
    for path in step_folders(directory):
        if path == skip:
            continue
        try:
            examine(path)
        except (ManifestMismatch, NotACheckpoint) as err:
            rejected.append(err)
            continue
        return path, rejected
    return None, rejected


def _move_aside(rejected: list[CheckpointError], destination: Path) -> None:
    """Move the folders a resume passes over to `destination` (see the module doc)."""
    for err in rejected:
        path = Path(err.folder)
        target, suffix = destination / path.name, 0
        while target.exists():
            suffix += 1
            target = destination / f"{path.name}.{suffix}"
        warnings.warn(f"{err}; skipped, moved to {target}", CheckpointWarning, stacklevel=3)
        if jax.process_index() == 0:  # one process moves; the others wait for it below
            destination.mkdir(parents=True, exist_ok=True)
            path.rename(target)
    if rejected and jax.process_count() > 1:
        from jax.experimental import multihost_utils

        multihost_utils.sync_global_devices("jaxopt_rl.training.checkpoint_folders.move_aside")
