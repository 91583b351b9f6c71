"""The package layering of docs/guides/architecture.md, enforced on the source.

Imports point down only: training -> rollouts -> {sampling, rewards, data, sandbox_cluster};
evaluation never imports training; the simulator imports only rewards and data; nothing in
`sandbox_cluster` imports `jaxopt_rl`. And no two modules import each other, directly or
through others (the module graph has no circle).

Every import statement counts, including those inside functions (a lazy import is still a
dependency). The implicit import of a parent package (`import a.b` runs `a/__init__`) does not:
a package's `__init__` re-exporting its submodules would otherwise close a trivial circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("jaxopt_rl", "sandbox_cluster")
EXCLUDED = ("jaxopt_rl/data/mini/sources", "jaxopt_rl/data/mini/score_tasks")

# The layers of jaxopt_rl: what each part may import besides itself. `config`, `dimensions`,
# `errors`, `lazy` and `manifest` are leaves every layer may use; `cli` and `commands` are the
# top and may use anything.
LEAVES = {"jaxopt_rl.config", "jaxopt_rl.dimensions", "jaxopt_rl.errors", "jaxopt_rl.lazy",
          "jaxopt_rl.manifest"}
ALLOWED = {
    "jaxopt_rl.config": set(),
    "jaxopt_rl.dimensions": set(),
    "jaxopt_rl.errors": set(),
    "jaxopt_rl.lazy": set(),
    "jaxopt_rl.manifest": set(),
    "jaxopt_rl.rewards": {"sandbox_cluster"},
    "jaxopt_rl.data": {"jaxopt_rl.rewards", "sandbox_cluster"},
    "jaxopt_rl.model": set(),
    "jaxopt_rl.sampling": {"jaxopt_rl.model"},
    "jaxopt_rl.rollouts": {"jaxopt_rl.sampling", "jaxopt_rl.model", "jaxopt_rl.rewards",
                           "jaxopt_rl.data", "sandbox_cluster"},
    "jaxopt_rl.training": {"jaxopt_rl.rollouts", "jaxopt_rl.sampling", "jaxopt_rl.model",
                           "jaxopt_rl.rewards", "jaxopt_rl.data", "sandbox_cluster"},
    "jaxopt_rl.evaluation": {"jaxopt_rl.rollouts", "jaxopt_rl.sampling", "jaxopt_rl.model",
                             "jaxopt_rl.rewards", "jaxopt_rl.data", "sandbox_cluster"},
    "jaxopt_rl.simulator": {"jaxopt_rl.rewards", "jaxopt_rl.data"},
    "jaxopt_rl.planning": {"jaxopt_rl.training", "jaxopt_rl.rollouts", "jaxopt_rl.sampling",
                           "jaxopt_rl.model", "jaxopt_rl.rewards", "jaxopt_rl.data",
                           "sandbox_cluster"},
    "jaxopt_rl.demo": {"jaxopt_rl.training", "jaxopt_rl.evaluation", "jaxopt_rl.rollouts",
                       "jaxopt_rl.sampling", "jaxopt_rl.model", "jaxopt_rl.rewards",
                       "jaxopt_rl.data", "sandbox_cluster"},
}
TOP = {"jaxopt_rl", "jaxopt_rl.cli", "jaxopt_rl.commands", "jaxopt_rl.config_docs"}
# Names promised in one package before they moved a layer up, re-exported lazily (on first
# attribute access, never at import): the only upward edges, each named here.
REEXPORTS = {("jaxopt_rl.rewards", "jaxopt_rl.evaluation.metrics")}


def _modules() -> dict[str, Path]:
    modules = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            if any(str(path.relative_to(ROOT)).startswith(e) for e in EXCLUDED):
                continue
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def _imports(name: str, path: Path) -> set[str]:
    """The project modules `name` imports explicitly (resolved: `from a import b` is `a.b` when
    that is a module, else `a`)."""
    is_package = path.name == "__init__.py"
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = name.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                module = ".".join(base + ([node.module] if node.module else []))
            else:
                module = node.module or ""
            for alias in node.names:
                candidate = f"{module}.{alias.name}"
                targets.append(candidate if candidate in MODULES else module)
        found.update(t for t in targets if t in MODULES and t != name)
    return found


GRAPH = {name: _imports(name, path) for name, path in MODULES.items()}


def _part(module: str) -> str:
    if module.startswith("sandbox_cluster"):
        return "sandbox_cluster"
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 1 else module


def test_layers_point_down():
    violations = []
    for name, targets in GRAPH.items():
        part = _part(name)
        for target in targets:
            other = _part(target)
            if other == part or other in LEAVES or part in TOP or (name, target) in REEXPORTS:
                continue
            if part == "sandbox_cluster":
                violations.append(f"{name} imports {target}: sandbox_cluster stands alone")
            elif part not in ALLOWED:
                violations.append(f"{name}: package {part} has no layer in ALLOWED; add it")
            elif other not in ALLOWED[part]:
                violations.append(f"{name} imports {target}: {part} may not import {other}")
    assert not violations, "\n".join(sorted(violations))


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(sorted(component))
    return components


def test_no_import_circles():
    circles = _cycles(GRAPH)
    assert not circles, "import circles: " + "; ".join(" <-> ".join(c) for c in circles)


@pytest.mark.parametrize(
    "graph, expected",
    [
        ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
        ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
        ({"a": {"b"}, "b": set(), "c": {"b"}}, []),
    ],
)
def test_cycle_finder_on_known_graphs(graph, expected):
    assert _cycles(graph) == expected

