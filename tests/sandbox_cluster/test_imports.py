"""The import drawing of `sandbox_cluster` (every import, module-level or deferred inside a
function) has no circle: client <- fleet <- connecting, node <- server. A package's
`__init__` importing its own submodules (the lazy face of the package, the jail backend
registry) is not counted as an edge."""

from __future__ import annotations

import ast
from pathlib import Path

import sandbox_cluster

PACKAGE = Path(sandbox_cluster.__file__).parent


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PACKAGE.rglob("*.py")}


def _resolve(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def imports_of(name: str) -> set[str]:
    path = MODULES[name]
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{anchor}.{base}".rstrip(".")
            # `from pkg import name`: the submodule pkg.name if there is one, else pkg itself
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in MODULES else base
                       for alias in node.names]
        else:
            continue
        for target in targets:
            module = _resolve(target) if target.startswith("sandbox_cluster") else None
            # A package's __init__ loading its own parts (lazily, e.g. the backend registry)
            # is the package's face, not a circle.
            own_part = path.name == "__init__.py" and module is not None and module.startswith(
                name + ".")
            if module is not None and module != name and not own_part:
                found.add(module)
    return found


def _cycles() -> list[list[str]]:
    graph = {name: imports_of(name) for name in MODULES}
    cycles, state = [], {}

    def visit(node: str, stack: list[str]) -> None:
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == "open":
                cycles.append([*stack[stack.index(nxt):], nxt])
            elif nxt not in state:
                visit(nxt, stack)
        stack.pop()
        state[node] = "done"

    for name in sorted(graph):
        if name not in state:
            visit(name, [])
    return cycles


def test_no_import_circle_in_sandbox_cluster() -> None:
    assert _cycles() == []
