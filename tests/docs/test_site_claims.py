"""What the README and the guides name exists in the code: commands and their options, config
keys, repository paths, Python names and imports, and the table of shipped environments.

A moved or renamed thing fails here with the page that still names it, instead of leaving a
guide that contradicts the code."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

from tests.docs.test_guides import PAGES, fenced_blocks
from tests.docs.test_site_api import resolve

ROOT = Path(__file__).resolve().parents[2]
CONFIG_PAGE = ROOT / "docs" / "config.md"
TEXT = {page: page.read_text() for page in PAGES}


def _inline_code(text: str) -> list[str]:
    """Backticked spans outside fenced blocks."""
    text = re.sub(r"(?ms)^\s*(`{3,}|~{3,}).*?^\s*\1\s*$", "", text)
    return [span.strip() for span in re.findall(r"(?<!`)`([^`\n]+)`(?!`)", text)]


def _command_lines(text: str, program: str) -> list[str]:
    """`program ...` invocations: lines of fenced blocks (continuations joined, comments cut)
    and inline code spans."""
    found = []
    for page_block in re.findall(r"(?ms)^\s*```[\w-]*\n(.*?)^\s*```\s*$", text):
        for line in page_block.replace("\\\n", " ").splitlines():
            line = line.split(" #", 1)[0].removeprefix("$ ").strip()
            match = re.search(rf"(?:^|[\s(\"']){re.escape(program)}(?=\s|$)", line)
            if match and not line.startswith(("import", "from")):
                found.append(line[match.end() - len(program):])
    found += [span for span in _inline_code(text) if span.startswith(program + " ")]
    return found


@cache
def _jaxopt_parsers() -> dict[tuple[str, ...], object]:
    from jaxopt_rl.cli import build_parser

    return _subparsers(build_parser())


@cache
def _sandbox_parsers() -> dict[tuple[str, ...], object]:
    from sandbox_cluster.cli import build_parser

    return _subparsers(build_parser())


def _subparsers(parser, path: tuple[str, ...] = ()) -> dict[tuple[str, ...], object]:
    import argparse

    table = {path: parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                table |= _subparsers(sub, (*path, name))
    return table


def _check_invocation(line: str, parsers: dict) -> str | None:
    words = [w for w in re.split(r"\s+", line.replace("[", " ").replace("]", " "))
             if w and w not in {"…", "..."}][1:]
    path: tuple[str, ...] = ()
    for word in words:
        if (*path, word) in parsers:
            path = (*path, word)
        elif not word.startswith("-"):
            break
    if not path and words and not words[0].startswith("-"):
        return f"unknown command {words[0]!r}"
    parser = parsers[path]
    options = {s for action in parser._actions for s in action.option_strings}
    unknown = [w.split("=")[0] for w in words
               if w.startswith("--") and w.split("=")[0] not in options]
    return f"{' '.join(path)}: unknown option(s) {unknown}" if unknown else None


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_commands_and_options_exist(page):
    bad = []
    for program, parsers in (("jaxopt-rl", _jaxopt_parsers()),
                             ("sandbox-cluster", _sandbox_parsers())):
        for line in _command_lines(TEXT[page], program):
            if problem := _check_invocation(line, parsers):
                bad.append(f"`{line}`: {problem}")
    local = (ROOT / "launch" / "local.sh").read_text()
    jobs = set(re.findall(r"(?m)^  ([a-z|]+)\)$", local))
    jobs = {job for group in jobs for job in group.split("|")}
    for line in _command_lines(TEXT[page], "launch/local.sh"):
        job = line.split()[1] if len(line.split()) > 1 else "demo"
        if job not in jobs:
            bad.append(f"`{line}`: launch/local.sh has no job {job!r} (has {sorted(jobs)})")
    assert not bad, "\n".join(bad)


@cache
def _config_keys() -> set[str]:
    return set(re.findall(r"^\| `([\w.]+)` \|", CONFIG_PAGE.read_text(), re.M))


@cache
def _config_sections() -> set[str]:
    return set(re.findall(r"^### `(\w+)`$", CONFIG_PAGE.read_text(), re.M))


def _named_keys(text: str) -> set[str]:
    keys = set()
    spans = _inline_code(text)
    spans += [w for line in _command_lines(text, "jaxopt-rl") for w in line.split()]
    for span in spans:
        for word in span.split():
            key = word.split("=", 1)[0].split(":", 1)[0]
            if re.fullmatch(r"[a-z_]+\.[a-z_]+", key) and key.split(".")[0] in _config_sections():
                keys.add(key)
    return keys


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_config_keys_are_in_the_config_reference(page):
    unknown = sorted(_named_keys(TEXT[page]) - _config_keys())
    assert not unknown, f"{page.name} names keys docs/config.md does not list: {unknown}"


TOP = ("jaxopt_rl/", "sandbox_cluster/", "configs/", "launch/", "benchmarks/", "tests/", "docs/",
       ".ci/")
PACKAGE_DIRS = ("training/", "model/", "sampling/", "rollouts/", "rewards/", "data/",
                "evaluation/", "simulator/", "planning/", "demo/", "commands/")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_repository_paths_exist(page):
    missing = []
    for span in _inline_code(TEXT[page]):
        path = span.split()[0].rstrip(",.:;")
        if any(c in path for c in "*{<[") or "NAME" in path or "=" in path:
            continue  # a pattern or a placeholder
        if path.startswith(TOP):
            where = ROOT / path
        elif path.startswith(PACKAGE_DIRS) and re.search(r"\.py$|/$", path):
            where = ROOT / "jaxopt_rl" / path
        else:
            continue
        if not where.exists():
            missing.append(path)
    assert not missing, f"{page.name} names paths that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_names_resolve(page):
    missing = []
    for span in _inline_code(TEXT[page]):
        name = re.split(r"[(\[\s]", span)[0].rstrip(".,:")
        if not re.fullmatch(r"(jaxopt_rl|sandbox_cluster)(\.\w+)+", name):
            continue
        try:
            resolve(name)
        except (ImportError, AttributeError) as error:
            missing.append(f"{name} ({error})")
    assert not missing, f"{page.name} names Python objects that do not exist: {missing}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_import_what_exists(page):
    import importlib

    missing = []
    for block in fenced_blocks(page):
        if block.language not in {"python", "py"}:
            continue
        for node in ast.walk(ast.parse(block.code)):
            if isinstance(node, ast.ImportFrom) and node.module:
                module = importlib.import_module(node.module)
                missing += [f"{block.id}: from {node.module} import {a.name}"
                            for a in node.names if not hasattr(module, a.name)
                            and not _is_submodule(node.module, a.name)]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    importlib.import_module(alias.name)
    assert not missing, "\n".join(missing)


def _is_submodule(package: str, name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(f"{package}.{name}") is not None


# ---- the table of shipped environments (docs/guides/rewards.md) ---------------------------

def env_row(env) -> str:
    """The row the rewards guide shows for one shipped environment."""
    if env.kind == "river":
        return f"| `{env.name}` | {env.description} | — | — | — | — | RiVER `{env.river.method}` |"
    gates = f"ρ {env.gates.timeout_tolerance:g}"
    if env.gates.quality_threshold is not None:
        gates += f", p {env.gates.quality_threshold:g}"
    c = env.composition
    composition = (f"naive `{c.naive_source}`/`{c.naive_map}`" if c.family == "naive"
                   else f"{c.family}, {c.mapping}")
    return (f"| `{env.name}` | {env.description} | {env.filter.kind} | {env.limit.kind} | "
            f"{env.ranking.kind} | {gates} | {composition} |")


def test_the_environment_table_matches_the_shipped_files():
    from jaxopt_rl.rewards import available_envs, load_env_config

    page = (ROOT / "docs" / "guides" / "rewards.md").read_text()
    shown = [line for line in page.splitlines() if re.match(r"^\| `[a-z0-9_]+` \|", line)]
    expected = [env_row(load_env_config(name)) for name in available_envs()]
    assert shown == expected, ("docs/guides/rewards.md's environment table differs from "
                               "configs/env/; the rows should read:\n" + "\n".join(expected))
