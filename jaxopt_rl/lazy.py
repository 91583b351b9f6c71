"""Lazy public faces of packages: a package's `__init__` names what it exports and from which
of its modules, and each name is imported on first use (PEP 562), so importing the package
stays cheap (no JAX, no Arrow) until a name is asked for."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable


def lazy_exports(package: str, exports: dict[str, str]
                 ) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """`(__getattr__, __dir__)` for `package`, where `exports` maps a public name to the
    package module that defines it."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(exports))

    return __getattr__, __dir__
