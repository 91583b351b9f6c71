"""The reference page of every train-config option, generated from the dataclasses themselves
(field, type, default, and the comment written beside the field), so it cannot drift.

    python -m jaxopt_rl.training.config_doc --write docs/config.md    # regenerate
    python -m jaxopt_rl.training.config_doc --check docs/config.md    # exit 1 if stale

A test runs the check, so a config field added without regenerating the page fails CI.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import re
import sys
import typing
from pathlib import Path
from typing import Any

from jaxopt_rl.training.config import TrainConfig

_FIELD_LINE = re.compile(r"^\s+(\w+)\s*:[^#]*?(?:#\s*(.*))?$")

HEADER = """# Train config reference

Generated from `jaxopt_rl.training.config.TrainConfig` by
`python -m jaxopt_rl.training.config_doc --write docs/config.md`; do not edit by hand.
Every key can be overridden on the command line as `key=value` (e.g. `grpo.rows=32`,
`model.param_dtype=bfloat16`, `output_dir=/tmp/run`, `steps=20`); an unknown key or a value of
the wrong type fails naming the key.
"""


def field_comments(cls: type) -> dict[str, str]:
    """``{field: comment}`` from the ``# ...`` written after each field in the class source."""
    comments = {}
    for line in inspect.getsource(cls).splitlines():
        match = _FIELD_LINE.match(line)
        if match and match.group(2):
            comments[match.group(1)] = match.group(2).strip()
    return comments


def markdown(cls: type = TrainConfig) -> str:
    sections: list[str] = [HEADER]
    _section(cls, "", sections)
    return "\n".join(sections).rstrip() + "\n"


def _section(cls: type, prefix: str, out: list[str]) -> None:
    hints = typing.get_type_hints(cls)
    comments = field_comments(cls)
    title = f"`{prefix.rstrip('.')}`" if prefix else "top level"
    doc = inspect.getdoc(cls) or ""
    doc = "" if doc.startswith(f"{cls.__name__}(") else doc.split("\n\n")[0].replace("\n", " ")
    out.append(f"## {title} ({cls.__name__})\n")
    if doc:
        out.append(doc + "\n")
    out.append("| key | type | default | meaning |")
    out.append("|---|---|---|---|")
    nested = []
    for field in dataclasses.fields(cls):
        if not field.init:
            continue
        annotation = hints[field.name]
        if dataclasses.is_dataclass(annotation):
            nested.append((annotation, f"{prefix}{field.name}."))
            out.append(f"| `{prefix}{field.name}` | section | | see below |")
            continue
        default = _default(field)
        out.append(
            f"| `{prefix}{field.name}` | {_type_name(annotation)} | {default} | "
            f"{comments.get(field.name, '')} |"
        )
    out.append("")
    for child, child_prefix in nested:
        _section(child, child_prefix, out)


def _default(field: dataclasses.Field) -> str:
    if field.default is not dataclasses.MISSING:
        value: Any = field.default
    elif field.default_factory is not dataclasses.MISSING:
        value = field.default_factory()
    else:
        return "required"
    return f"`{value!r}`".replace("|", "\\|")


def _type_name(annotation: Any) -> str:
    text = inspect.formatannotation(annotation).replace("typing.", "")
    text = re.sub(r"jaxopt_rl\.[\w.]+\.", "", text)
    return f"`{text}`".replace("|", "\\|")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path)
    group.add_argument("--check", type=Path)
    args = parser.parse_args(argv)
    text = markdown()
    if args.write:
        args.write.write_text(text)
        return 0
    if not args.check.exists() or args.check.read_text() != text:
        print(f"{args.check} is stale: run python -m jaxopt_rl.training.config_doc --write "
              f"{args.check}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
