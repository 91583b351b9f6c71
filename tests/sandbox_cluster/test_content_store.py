"""Blob store: verified writes, LRU eviction under the disk budget, restart."""

import hashlib
import io
import os
from collections import OrderedDict

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sandbox_cluster.content_store import (
    BlobTooLarge,
    ContentStore,
    DigestMismatch,
    IncompleteUpload,
    sha256_hex,
)


def blob(n: int, tag: int = 0) -> tuple[str, bytes]:
    data = bytes([tag % 256]) * n
    return sha256_hex(data), data


def test_put_get_roundtrip_and_upload_once(tmp_path):
    store = ContentStore(tmp_path, budget_bytes=1000)
    digest, data = blob(100)
    assert store.put(digest, data) is True
    assert store.put(digest, data) is False  # already there: not stored twice
    assert store.get(digest) == data
    assert store.has(digest)
    assert (tmp_path / digest[:2] / digest).read_bytes() == data
    stats = store.stats()
    assert (stats.blobs, stats.bytes, stats.uploads, stats.hits) == (1, 100, 1, 1)
    assert store.get(sha256_hex(b"absent")) is None
    assert store.stats().misses == 1


def test_corrupt_or_truncated_uploads_store_nothing(tmp_path):
    store = ContentStore(tmp_path, budget_bytes=1000)
    digest, data = blob(50)
    with pytest.raises(DigestMismatch, match=digest):
        store.put(digest, data + b"x")
    with pytest.raises(IncompleteUpload, match="after 50 of 60 bytes"):
        store.put_stream(digest, io.BytesIO(data), 60)
    assert not store.has(digest)
    assert store.stats().bytes == 0
    assert list((tmp_path / "tmp").iterdir()) == []  # no temp file left behind


def test_oversize_blob_is_refused_before_reading(tmp_path):
    store = ContentStore(tmp_path, budget_bytes=100, max_blob_bytes=60)
    digest, _ = blob(61)

    class Unreadable(io.RawIOBase):
        def read(self, n=-1):
            raise AssertionError("must not read an oversize body")

    with pytest.raises(BlobTooLarge, match="61 bytes exceeds the limit of 60"):
        store.put_stream(digest, Unreadable(), 61)
    with pytest.raises(ValueError, match="not a sha256"):
        store.has("ABC")
    with pytest.raises(ValueError, match="budget_bytes"):
        ContentStore(tmp_path, budget_bytes=0)


def test_eviction_is_least_recently_used(tmp_path):
    store = ContentStore(tmp_path, budget_bytes=300)
    a, b, c, d = (blob(100, i) for i in range(4))
    for digest, data in (a, b, c):
        store.put(digest, data)
    store.get(a[0])  # a becomes most recent; b is now the oldest
    store.put(*d)
    assert not store.has(b[0]) and not os.path.exists(store.path(b[0]))
    assert store.has(a[0]) and store.has(c[0]) and store.has(d[0])
    stats = store.stats()
    assert (stats.bytes, stats.evictions, stats.evicted_bytes) == (300, 1, 100)
    assert store.missing([b[0], a[0], b[0]]) == [b[0]]


@given(st.lists(st.tuples(st.sampled_from(["put", "get"]), st.integers(0, 7)), max_size=60))
def test_budget_and_lru_match_a_reference_model(tmp_path_factory, ops):
    budget = 250
    sizes = [10, 40, 60, 90, 120, 30, 200, 250]
    store = ContentStore(tmp_path_factory.mktemp("store"), budget_bytes=budget)
    model: OrderedDict[str, int] = OrderedDict()
    for op, k in ops:
        digest, data = blob(sizes[k], k)
        if op == "put":
            if digest in model:
                model.move_to_end(digest)
            else:
                while model and sum(model.values()) + len(data) > budget:
                    model.popitem(last=False)
                model[digest] = len(data)
            store.put(digest, data)
        else:
            got = store.get(digest)
            if digest in model:
                model.move_to_end(digest)
                assert got == data
            else:
                assert got is None
        assert store.stats().bytes == sum(model.values()) <= budget
        assert [d for d in model] == [d for d in model if store.has(d)]
        assert store.stats().blobs == len(model)


def test_restart_reindexes_and_applies_a_smaller_budget(tmp_path):
    store = ContentStore(tmp_path, budget_bytes=1000)
    old, new = blob(300, 1), blob(300, 2)
    store.put(*old)
    os.utime(store.path(old[0]), (1, 1))  # make "old" clearly least recent on disk
    store.put(*new)
    (tmp_path / "tmp").mkdir(exist_ok=True)
    (tmp_path / "tmp" / "partial.upload").write_bytes(b"half")
    (tmp_path / "ab").mkdir(exist_ok=True)
    (tmp_path / "ab" / "not-a-digest").write_bytes(b"ignored")

    again = ContentStore(tmp_path, budget_bytes=400)
    assert again.has(new[0]) and not again.has(old[0])
    assert again.stats().bytes == 300
    assert list((tmp_path / "tmp").iterdir()) == []


def test_private_root_is_removed_on_close():
    store = ContentStore(None, budget_bytes=100)
    digest, data = blob(10)
    store.put(digest, data)
    root = store.root
    assert root.exists()
    store.close()
    assert not root.exists()
    assert hashlib.sha256(data).hexdigest() == digest
