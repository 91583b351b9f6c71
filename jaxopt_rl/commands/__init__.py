"""Subcommands of `jaxopt-rl`; each module: `HELP`, `add_arguments(parser)`, `run(args) -> int`.

Also the one override syntax every command shares: a config override is a `key=value` word
(a dotted key, `=`, a YAML scalar), given anywhere after the command's own words.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

# A dotted key then `=`: `ranking.ties=average`. A path (`runs/x=1/dump.json.gz`) has a `/`
# before its `=`, so it never reads as an override.
_OVERRIDE = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*=")


def is_override(word: str) -> bool:
    return _OVERRIDE.match(word) is not None


def split_overrides(words: Sequence[str]) -> tuple[list[str], list[str]]:
    """``(other words, key=value overrides)`` of a command line's words, each in its order."""
    return ([w for w in words if not is_override(w)], [w for w in words if is_override(w)])
