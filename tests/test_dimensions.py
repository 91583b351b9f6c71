"""The dimension-letter table: one definition, the README agrees, every array name obeys it."""

from __future__ import annotations

import re
from pathlib import Path

from jaxopt_rl.dimensions import DIMENSIONS

ROOT = Path(__file__).resolve().parents[1]
SUFFIX = re.compile(r"\b[a-z][a-z0-9_]*?_([A-Z][A-Z0-9]*)\b")
# Names whose capital tail is a word, not a shape (the paper's quantity names).
NOT_SHAPES = {"QAR", "QP", "GFR"}


def _table_rows(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^\| ([A-Z]) \| (.+?) \|$", text, re.M)}


def test_module_docstring_and_readme_carry_the_same_letters():
    import jaxopt_rl.dimensions as module

    docstring_rows = _table_rows(module.__doc__)
    readme_rows = _table_rows((ROOT / "README.md").read_text())
    assert set(docstring_rows) == set(DIMENSIONS)
    assert set(readme_rows) == set(DIMENSIONS), "README's dimension table differs from jaxopt_rl.dimensions"
    # The reserved letters the design gives other meanings never become axes.
    assert "N" not in DIMENSIONS


def test_every_array_suffix_uses_the_table():
    letters = set(DIMENSIONS) | set("0123456789")
    offenders = []
    for path in sorted((ROOT / "jaxopt_rl").rglob("*.py")):
        if "data/mini/" in path.as_posix():
            continue
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            for match in SUFFIX.finditer(line):
                suffix = match.group(1)
                if suffix in NOT_SHAPES:
                    continue
                unknown = set(suffix) - letters
                if unknown:
                    offenders.append(f"{path.relative_to(ROOT)}:{number}: {match.group(0)} ({''.join(sorted(unknown))})")
    assert not offenders, "letters outside the table:\n" + "\n".join(offenders[:40])


def test_suffix_pattern_reads_shapes_only():
    assert [m.group(1) for m in SUFFIX.finditer("status_BT + ref_duration_PTH - MAX_VALUE")] == ["BT", "PTH"]
