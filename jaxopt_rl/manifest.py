"""Checkpoint manifests: the SHA-256 digest and size of every file a checkpoint folder was written
with, stored beside them in ``manifest.sha256.json`` and checked before any value is read.

Used by both kinds of checkpoint: a training step folder (`jaxopt_rl.training.checkpoints`, every
file Orbax wrote, sealed after Orbax's commit) and a Hugging Face folder
(`jaxopt_rl.model.checkpoint`, the files `save_pretrained` wrote; a folder without a manifest,
such as a third party's, is read as it is).

Choices: digests per file, not per array: a file check needs no decoder, so random bytes, a
truncated or a deleted file are named as such instead of surfacing as a TensorStore, JSON or
UTF-8 error from deep inside a reader; it covers metadata files as well as tensor data. Sizes
are checked for every file before any digest is computed, so a deleted or truncated file is
found without reading the rest. The manifest is written to a temporary name and renamed, so a
process killed while writing it leaves either no manifest or a whole one. This module imports
nothing heavy: the command line imports `CheckpointError` from here to print it as one line.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path, PurePosixPath

MANIFEST_FILE = "manifest.sha256.json"
FORMAT = "jaxopt-rl checkpoint manifest 1"
_PARTIAL_FILE = f".{MANIFEST_FILE}.partial"


class CheckpointError(ValueError):
    """A checkpoint folder cannot be read or written; the message names the folder or file and
    what is wrong with it, in one line."""


class ManifestMismatch(CheckpointError):
    """A folder's files are not the ones its manifest lists: `item` is the first bad file (or
    the manifest itself), `reason` what is wrong with it."""

    def __init__(self, folder: Path, item: str, reason: str):
        self.folder, self.item, self.reason = folder, item, reason
        super().__init__(f"{folder} failed verification: {item} {reason}")


def file_digest(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def write_manifest(folder: str | Path, names: list[str] | None = None) -> Path:
    """Seal `folder`: record the size and SHA-256 of `names` (paths relative to it, ``/``
    separated), default every file below it except an earlier manifest. Returns its path."""
    folder = Path(folder)
    if names is None:
        names = [name for name in _files_below(folder)
                 if name not in (MANIFEST_FILE, _PARTIAL_FILE)]
    files = {}
    for name in sorted(names):
        path = folder / name
        files[name] = {"bytes": path.stat().st_size, "sha256": file_digest(path)}
    manifest = folder / MANIFEST_FILE
    partial = folder / _PARTIAL_FILE
    with partial.open("w") as handle:
        json.dump({"format": FORMAT, "files": files}, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(partial, manifest)
    return manifest


def has_manifest(folder: str | Path) -> bool:
    return (Path(folder) / MANIFEST_FILE).is_file()


def verify_manifest(folder: str | Path) -> bool:
    """Check `folder` against its manifest: True when every listed file has its recorded size
    and digest, False when there is no manifest; raises `ManifestMismatch` naming the first
    bad file (sizes of all files first, then digests, each in name order)."""
    folder = Path(folder)
    if not has_manifest(folder):
        return False
    files = _read_manifest(folder)
    for name, entry in files.items():
        path = folder / name
        if not path.is_file():
            raise ManifestMismatch(folder, name, "is missing")
        size = path.stat().st_size
        if size != entry["bytes"]:
            raise ManifestMismatch(folder, name, f"has {size} bytes where the manifest says "
                                   f"{entry['bytes']}: truncated or overwritten")
    for name, entry in files.items():
        if file_digest(folder / name) != entry["sha256"]:
            raise ManifestMismatch(folder, name, "differs from its SHA-256 in the manifest: "
                                   "its bytes changed after it was written")
    return True


def _read_manifest(folder: Path) -> dict[str, dict]:
    """The manifest's files in name order; anything malformed is a `ManifestMismatch` of the
    manifest itself (a manifest of random bytes is a damaged checkpoint, not a crash)."""
    try:
        data = json.loads((folder / MANIFEST_FILE).read_bytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ManifestMismatch(folder, MANIFEST_FILE, f"is not a readable manifest ({err})"
                               ) from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise ManifestMismatch(folder, MANIFEST_FILE, f"is not a manifest of format {FORMAT!r}")
    files = data.get("files")
    if not isinstance(files, dict):
        raise ManifestMismatch(folder, MANIFEST_FILE, "lists no files")
    for name, entry in files.items():
        parts = PurePosixPath(name).parts
        if PurePosixPath(name).is_absolute() or ".." in parts or not parts:
            # a listed path must stay inside the folder it describes
            raise ManifestMismatch(folder, MANIFEST_FILE, f"lists a path outside it: {name!r}")
        if not (isinstance(entry, dict) and type(entry.get("bytes")) is int
                and isinstance(entry.get("sha256"), str)):
            raise ManifestMismatch(folder, MANIFEST_FILE, f"has a malformed entry for {name!r}")
    return dict(sorted(files.items()))


def _files_below(folder: Path) -> list[str]:
    return sorted(path.relative_to(folder).as_posix() for path in folder.rglob("*")
                  if path.is_file())
