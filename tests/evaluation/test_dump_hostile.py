"""Hostile evaluation dumps: whatever a dump file holds, `jaxopt-rl eval replay`
ends with a report (exit 0) or one line naming the file and the field (exit 2), never a
traceback (TypeError, AttributeError, RecursionError, EOFError before this change)."""

from __future__ import annotations

import copy
import gzip
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from jaxopt_rl.cli import main
from jaxopt_rl.evaluation.dump import DumpError, read_dump
from tests.evaluation.dumps import make_dump

BASE = make_dump(problems=2, n=3)
HOSTILE = [None, 0, -1, 1.5, 1e308, True, "x", "\ud800", [], {}, [[[]]], [None], {"a": 1}]


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node[:3]):
            yield from _paths(value, (*prefix, index))


PATHS = list(_paths(BASE))[1:]


def _replay(path, tmp_path, capsys) -> tuple[int, str]:
    code = main(["eval", "replay", str(path), "--out", str(tmp_path / "out")])
    return code, capsys.readouterr().err


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(PATHS), st.sampled_from(HOSTILE))
def test_any_field_replaced_by_any_json_value_ends_cleanly(tmp_path, capsys, path, value):
    dump = copy.deepcopy(BASE)
    node = dump
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    file = tmp_path / "dump.json"
    file.write_text(json.dumps(dump))
    code, err = _replay(file, tmp_path, capsys)
    assert code in (0, 2)
    if code == 2:
        assert str(file) in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("name, content", [
    ("deep.json", "[" * 100_000 + "]" * 100_000),
    ("huge.json", '{"format": ' + "9" * 5000 + "}"),
    ("truncated.json.gz", gzip.compress(json.dumps(BASE).encode())[:200]),
    ("binary.json", bytes(range(256))),
])
def test_unreadable_files_are_one_line(tmp_path, name, content):
    path = tmp_path / name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(DumpError, match=str(path)):
        read_dump(path)
