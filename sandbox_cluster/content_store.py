"""Content-addressed blob store: test inputs and outputs kept on disk by sha256, under a budget.

Large optimization inputs (megabytes each, ~120 tests per problem, re-run by every rollout of a
group) should cross the network once per node. Clients upload a blob with
`PUT /v1/blobs/<sha256>` and afterwards reference it by hash in run requests; this store keeps
the bytes.

Layout: `<root>/<first two hex digits>/<sha256>` plus `<root>/tmp/` for uploads in progress. An
upload is streamed to a temporary file while its sha256 is computed, then renamed into place
only if the digest matches the one named in the URL, so a blob on disk is always exactly the
bytes its name promises (a truncated or corrupted upload never becomes visible).

Budget: the sum of blob sizes stays <= `budget_bytes`. Adding a blob evicts least recently used
blobs (recency = last put or get) until it fits; a blob larger than the whole budget is refused
(`BlobTooLarge`). Eviction is safe at any time because run requests copy the blobs they need
into memory when they are accepted: a client that references an evicted blob gets HTTP 409 and
uploads it again.

Restart: an existing root is re-indexed on start (recency from file mtimes, which `get` bumps),
files whose names are not a sha256 are ignored, and leftovers in `tmp/` are deleted. The index
trusts the file names (only a verified upload is ever renamed into place).

Thread-safe: the index is guarded by one lock; file I/O of a put happens outside it.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import os
import re
import shutil
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

SHA256_RE = re.compile(r"^[0-9a-f]{64}$")
_CHUNK = 1 << 20


class BlobError(Exception):
    """Base class of blob store errors."""


class BlobTooLarge(BlobError):
    """The blob is larger than the store's whole budget (or the per-blob limit)."""


class DigestMismatch(BlobError):
    """The uploaded bytes do not hash to the digest the upload named."""


class IncompleteUpload(BlobError):
    """The upload stream ended before the announced length."""


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def check_digest(digest: str) -> str:
    """Return `digest` if it is 64 lowercase hex characters, else raise ValueError."""
    if not isinstance(digest, str) or not SHA256_RE.match(digest):
        raise ValueError(f"not a sha256 digest (64 lowercase hex characters): {digest!r}")
    return digest


@dataclass(frozen=True)
class StoreStats:
    blobs: int
    bytes: int
    budget_bytes: int
    hits: int
    misses: int
    uploads: int
    evictions: int
    evicted_bytes: int


class ContentStore:
    """sha256 -> bytes on disk with LRU eviction under `budget_bytes`.

    `root=None` uses a private temporary directory removed by `close()`.
    """

    def __init__(self, root: str | os.PathLike | None, budget_bytes: int,
                 max_blob_bytes: int | None = None):
        if budget_bytes <= 0:
            raise ValueError(f"budget_bytes must be > 0, got {budget_bytes}")
        self._owns_root = root is None
        self.root = Path(tempfile.mkdtemp(prefix="sandbox-blobs-") if root is None else root)
        self.budget_bytes = int(budget_bytes)
        self.max_blob_bytes = min(self.budget_bytes, max_blob_bytes or self.budget_bytes)
        self._tmp = self.root / "tmp"
        self._lock = threading.Lock()
        self._sizes: OrderedDict[str, int] = OrderedDict()  # LRU first, MRU last
        self._total = 0
        self._hits = self._misses = self._uploads = self._evictions = self._evicted_bytes = 0
        self._reindex()

    # -- queries -------------------------------------------------------------------------------
    def path(self, digest: str) -> Path:
        check_digest(digest)
        return self.root / digest[:2] / digest

    def has(self, digest: str) -> bool:
        check_digest(digest)
        with self._lock:
            return digest in self._sizes

    def missing(self, digests: Iterable[str]) -> list[str]:
        """The digests (in first-seen order, deduplicated) that the store does not hold."""
        out: list[str] = []
        with self._lock:
            for d in digests:
                if d not in self._sizes and d not in out:
                    out.append(d)
        return out

    def get(self, digest: str) -> bytes | None:
        """The blob's bytes (and mark it recently used), or None if absent."""
        check_digest(digest)
        with self._lock:
            if digest not in self._sizes:
                self._misses += 1
                return None
            self._sizes.move_to_end(digest)
            self._hits += 1
        try:
            path = self.path(digest)
            data = path.read_bytes()
            os.utime(path)  # recency survives a restart
        except FileNotFoundError:  # evicted between the index check and the read
            with self._lock:
                self._hits -= 1
                self._misses += 1
            return None
        return data

    def stats(self) -> StoreStats:
        with self._lock:
            return StoreStats(len(self._sizes), self._total, self.budget_bytes, self._hits,
                              self._misses, self._uploads, self._evictions,
                              self._evicted_bytes)

    # -- updates -------------------------------------------------------------------------------
    def put(self, digest: str, data: bytes) -> bool:
        """Store `data` under `digest` (verified). Returns False if it was already present."""
        return self.put_stream(digest, io.BytesIO(data), len(data))

    def put_stream(self, digest: str, stream: BinaryIO, length: int) -> bool:
        """Store exactly `length` bytes read from `stream` under `digest`.

        Raises `BlobTooLarge` before reading anything if `length` exceeds the limit,
        `IncompleteUpload` if the stream ends early and `DigestMismatch` if the bytes do not
        hash to `digest`; nothing is stored in those cases. Returns False (after consuming the
        stream, so an HTTP connection stays usable) when the blob was already present.
        """
        check_digest(digest)
        if length > self.max_blob_bytes:
            raise BlobTooLarge(f"blob of {length} bytes exceeds the limit of "
                               f"{self.max_blob_bytes} bytes")
        self._tmp.mkdir(parents=True, exist_ok=True)
        hasher = hashlib.sha256()
        fd, tmp_name = tempfile.mkstemp(dir=self._tmp, prefix=digest[:12] + ".")
        try:
            with os.fdopen(fd, "wb") as out:
                remaining = length
                while remaining:
                    chunk = stream.read(min(_CHUNK, remaining))
                    if not chunk:
                        raise IncompleteUpload(f"upload ended after {length - remaining} of "
                                               f"{length} bytes")
                    hasher.update(chunk)
                    out.write(chunk)
                    remaining -= len(chunk)
            actual = hasher.hexdigest()
            if actual != digest:
                raise DigestMismatch(f"body hashes to sha256 {actual}, not {digest}")
            with self._lock:
                if digest in self._sizes:
                    self._sizes.move_to_end(digest)
                    return False
                self._evict_for(length)
                final = self.path(digest)
                final.parent.mkdir(exist_ok=True)
                os.replace(tmp_name, final)
                tmp_name = ""
                self._sizes[digest] = length
                self._total += length
                self._uploads += 1
            return True
        finally:
            if tmp_name:
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(tmp_name)

    def close(self) -> None:
        if self._owns_root:
            shutil.rmtree(self.root, ignore_errors=True)

    # -- internals (callers hold the lock) -----------------------------------------------------
    def _evict_for(self, incoming: int) -> None:
        while self._sizes and self._total + incoming > self.budget_bytes:
            victim = next(iter(self._sizes))
            self._evicted_bytes += self._sizes[victim]
            self._evictions += 1
            self._drop(victim)

    def _drop(self, digest: str) -> None:
        size = self._sizes.pop(digest, None)
        if size is None:
            return
        self._total -= size
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path(digest))

    def _reindex(self) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        shutil.rmtree(self._tmp, ignore_errors=True)
        self._tmp.mkdir()
        found: list[tuple[float, str, int]] = []
        for shard in self.root.iterdir():
            if not shard.is_dir() or len(shard.name) != 2:
                continue
            for blob in shard.iterdir():
                if SHA256_RE.match(blob.name) and blob.name[:2] == shard.name and blob.is_file():
                    st = blob.stat()
                    found.append((st.st_mtime, blob.name, st.st_size))
        with self._lock:
            for _, digest, size in sorted(found):
                self._sizes[digest] = size
                self._total += size
            self._evict_for(0)  # the budget may have shrunk since the last run
