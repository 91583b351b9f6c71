"""Every public name of the documented packages is rendered by the API reference (docs/api/).

"Public" is defined on docs/api/index.md and implemented by `public_names` below: a package's
`__all__` when it has one; else the non-underscore names its `__init__` binds; else, when the
`__init__` exports nothing, its public modules (non-underscore submodules). A name is covered
when an mkdocstrings directive (`::: dotted.path`) on the API pages renders that very object, or,
for a module, when a directive renders its package with `show_submodules: true`. The strict
site build (`launch/local.sh test`) separately fails when a directive names nothing.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import types
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
API = ROOT / "docs" / "api"
PACKAGES = (
    "jaxopt_rl.rewards",
    "jaxopt_rl.data",
    "jaxopt_rl.model",
    "jaxopt_rl.sampling",
    "jaxopt_rl.training",
    "jaxopt_rl.evaluation",
    "jaxopt_rl.simulator",
    "sandbox_cluster",
)


def public_names(package: str) -> tuple[str, list[str]]:
    """(the rule that applied, the public names) of a package, per docs/api/index.md."""
    module = importlib.import_module(package)
    if hasattr(module, "__all__"):
        return "__all__", list(module.__all__)
    own = vars(module)
    bound = [name for name, value in own.items()
             if not name.startswith("_") and not isinstance(value, types.ModuleType)
             and type(value).__module__ != "__future__"]
    if bound:
        return "__init__", bound
    return "modules", [info.name for info in pkgutil.iter_modules(module.__path__)
                       if not info.name.startswith("_")]


def directives() -> list[tuple[Path, str, dict]]:
    """(page, target, options) of every `::: target` directive on the API pages."""
    found = []
    for page in sorted(API.glob("*.md")):
        lines = page.read_text().splitlines()
        for i, line in enumerate(lines):
            match = re.match(r"^::: ([\w.]+)\s*$", line)
            if not match:
                continue
            block = []
            for following in lines[i + 1:]:
                if not following.startswith("    "):
                    break
                block.append(following[4:])
            options = (yaml.safe_load("\n".join(block)) or {}).get("options", {}) if block else {}
            found.append((page, match.group(1), options))
    return found


def resolve(target: str):
    """The object a dotted path names: the longest importable module, then attributes."""
    parts = target.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attribute in parts[cut:]:
            obj = getattr(obj, attribute)
        return obj
    raise ModuleNotFoundError(target)


DIRECTIVES = directives()


def test_the_api_pages_have_directives():
    assert len(DIRECTIVES) >= 50


@pytest.mark.parametrize("page, target", [(p.name, t) for p, t, _ in DIRECTIVES])
def test_every_directive_names_an_object_that_exists(page, target):
    try:
        resolve(target)
    except (ImportError, AttributeError) as error:
        pytest.fail(f"docs/api/{page}: `::: {target}` names nothing: {error}")


@pytest.mark.parametrize("package", PACKAGES)
def test_every_public_name_is_rendered(package):
    rule, names = public_names(package)
    assert names, f"{package} has no public names under rule {rule}"
    rendered = {id(resolve(target)) for _, target, _ in DIRECTIVES
                if target.startswith(package.split(".")[0])}
    with_submodules = {target for _, target, options in DIRECTIVES
                       if options.get("show_submodules")}
    missing = []
    for name in names:
        if rule == "modules":
            if f"{package}.{name}" not in {t for _, t, _ in DIRECTIVES} and package not in with_submodules:
                missing.append(name)
        elif id(getattr(importlib.import_module(package), name)) not in rendered:
            missing.append(name)
    assert not missing, (f"public names of {package} ({rule}) missing from docs/api/: {missing}; "
                         "add a `::: path` directive for each")


def test_the_index_page_defines_public_and_lists_every_package():
    index = (API / "index.md").read_text()
    assert "__all__" in index and "public modules" in index
    for package in PACKAGES:
        assert f"`{package}`" in index, package


def test_public_names_follows_the_three_rules():
    assert public_names("jaxopt_rl.rewards")[0] == "__all__"
    rule, modules = public_names("jaxopt_rl.training")
    assert rule == "modules" and {"grpo", "loop", "step"} <= set(modules)
    assert not any(name.startswith("_") for name in modules)
