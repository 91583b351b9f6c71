"""The commands the docs show are the commands that work.

Every fenced `bash`, `console` or `python` block of README.md, docs/index.md and
docs/guides/*.md carries a marker on the line above it:

  <!-- runs-in-test -->                  run here, from a scratch copy of the repository's layout
                                        (symlinks, so outputs land in a temporary folder), with a
                                        timeout; `console` blocks run their `$ ` lines
  <!-- not-in-test: REASON (why) -->    not run, for one of the REASONS below, said in the page

A block without a marker fails `test_every_command_block_is_marked`, and each block that is not
run is listed as a skip with its reason, so nothing is left out silently. The README's two
commands are checked against `.ci/run` and `launch/local.sh`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = (ROOT / "README.md", ROOT / "docs" / "index.md",
         *sorted((ROOT / "docs" / "guides").glob("*.md")))
# Fenced blocks in these languages are commands a reader may copy: each must be marked.
COMMAND_LANGUAGES = {"bash", "sh", "shell", "console", "python", "py"}
RUN = "<!-- runs-in-test -->"
NOT_RUN = re.compile(r"^<!-- not-in-test: (?P<reason>[a-z-]+)(?: \((?P<why>.+)\))? -->$")
REASONS = {
    "long": "takes minutes (a demo, a build, a benchmark, a training run)",
    "needs-hardware": "needs accelerators, remote hosts, a fleet or a large checkpoint",
    "serves": "runs until stopped",
    "writes-tree": "writes into the repository's tracked files",
    "installs": "may install packages (the set-up step)",
    "fragment": "a Python fragment that needs objects defined elsewhere",
}
TIMEOUT_S = 300
# What a command prints when no jail backend can start on this machine: the block is then
# skipped, or fails when JAXOPT_REQUIRE_JAILS=1 (CI), as the sandbox tests do.
NO_JAIL = r"JailUnavailable|CgroupConflict|sandbox unavailable|cannot start the pool"
FIRST_SCREEN_LINES = 40


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    marker: str  # the line above the fence ("" when it is not an HTML comment)

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def runs(self) -> bool:
        return self.marker == RUN


def fenced_blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown page, with the marker line above it."""
    lines = path.read_text().splitlines()
    blocks, i = [], 0
    while i < len(lines):
        opening = re.match(r"^\s*(`{3,}|~{3,})\s*([\w+-]*)", lines[i])
        if not opening:
            i += 1
            continue
        fence, language = opening.group(1), opening.group(2).lower()
        end = i + 1
        while end < len(lines) and not re.match(rf"^\s*{re.escape(fence[0])}{{{len(fence)},}}\s*$",
                                                 lines[end]):
            end += 1
        above = lines[i - 1].strip() if i > 0 else ""
        blocks.append(Block(path, i + 1, language, "\n".join(lines[i + 1:end]),
                            above if above.startswith("<!--") else ""))
        i = end + 1
    return blocks


def command_blocks() -> list[Block]:
    return [b for page in PAGES for b in fenced_blocks(page) if b.language in COMMAND_LANGUAGES]


def console_commands(code: str) -> str:
    """The `$ ` lines of a console block (with their `\\` continuations), as one script."""
    commands, continuing = [], False
    for line in code.splitlines():
        if line.startswith("$ ") or continuing:
            text = line[2:] if line.startswith("$ ") and not continuing else line
            commands.append(text)
            continuing = text.rstrip().endswith("\\")
    return "\n".join(commands)


BLOCKS = command_blocks()
RUNNABLE = [b for b in BLOCKS if b.runs]
NOT_RUNNABLE = [b for b in BLOCKS if not b.runs]


def test_the_pages_have_command_blocks_of_both_kinds():
    assert len(RUNNABLE) >= 10 and NOT_RUNNABLE, (len(RUNNABLE), len(NOT_RUNNABLE))


def test_every_command_block_is_marked():
    bad = []
    for block in BLOCKS:
        if block.runs:
            continue
        match = NOT_RUN.match(block.marker)
        if not match:
            bad.append(f"{block.id}: no marker (want {RUN!r} or '<!-- not-in-test: REASON (why) -->')")
        elif match.group("reason") not in REASONS:
            bad.append(f"{block.id}: unknown reason {match.group('reason')!r}; one of {sorted(REASONS)}")
        elif not match.group("why"):
            bad.append(f"{block.id}: say why in parentheses after the reason")
    assert not bad, "\n".join(bad)


@pytest.mark.parametrize("block", NOT_RUNNABLE, ids=[b.id for b in NOT_RUNNABLE])
def test_block_not_executed(block):
    match = NOT_RUN.match(block.marker)
    assert match, f"{block.id} is not marked"
    pytest.skip(f"{block.id} not executed ({match.group('reason')}): {match.group('why')}")


@pytest.fixture(scope="module")
def workdir(tmp_path_factory) -> Path:
    """The repository's top level as symlinks in a scratch folder: relative paths in the pages
    resolve, and whatever a command writes under `runs/` lands here, not in the tree."""
    folder = tmp_path_factory.mktemp("guides")
    for entry in ROOT.iterdir():
        if entry.name not in {"runs", "site", ".git"}:
            (folder / entry.name).symlink_to(entry)
    return folder


@pytest.mark.parametrize("block", RUNNABLE, ids=[b.id for b in RUNNABLE])
def test_runnable_block(block, workdir, tmp_path):
    env = {**os.environ, "JAX_PLATFORMS": "cpu", "PYTHONUNBUFFERED": "1",
           "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}
    if block.language in {"python", "py"}:
        script = tmp_path / "snippet.py"
        script.write_text(block.code + "\n")
        argv = [sys.executable, str(script)]
    else:
        code = console_commands(block.code) if block.language == "console" else block.code
        assert code.strip(), f"{block.id}: nothing to run"
        argv = ["bash", "-euo", "pipefail", "-c", code]
    done = subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True,
                          timeout=TIMEOUT_S)
    if done.returncode != 0 and re.search(NO_JAIL, done.stdout + done.stderr):
        from tests.sandbox_cluster.jail_required import no_jail

        no_jail(f"{block.id} runs programs in the sandbox, and no jail backend starts here")
    assert done.returncode == 0, (
        f"{block.id} exited {done.returncode}:\n{block.code}\n--- stdout (tail)\n"
        f"{done.stdout[-3000:]}\n--- stderr (tail)\n{done.stderr[-3000:]}")


def test_console_blocks_keep_commands_apart_from_output():
    block = "$ printf 'x\\n' > /tmp/a \\\n    && cat /tmp/a\nx\n$ echo done\ndone"
    assert console_commands(block) == "printf 'x\\n' > /tmp/a \\\n    && cat /tmp/a\necho done"


# ---- the README's two commands -------------------------------------------------------------

TWO_COMMANDS = ("bash launch/local.sh demo", "bash launch/local.sh test")


def _commands(code: str) -> list[str]:
    return [line.split("#", 1)[0].strip() for line in code.splitlines()
            if line.split("#", 1)[0].strip()]


def test_readme_shows_the_two_commands_on_its_first_screen():
    readme = ROOT / "README.md"
    first = next(b for b in fenced_blocks(readme) if b.language in COMMAND_LANGUAGES)
    assert first.line + len(first.code.splitlines()) < FIRST_SCREEN_LINES, first.line
    assert _commands(first.code) == list(TWO_COMMANDS)


def test_the_test_command_is_what_ci_runs():
    ci = [line.strip() for line in (ROOT / ".ci" / "run").read_text().splitlines()
          if line.strip() and not line.lstrip().startswith("#")]
    assert f"exec {TWO_COMMANDS[1]}" in ci, ci


def _case_branch(script: str, name: str) -> str:
    match = re.search(rf"(?ms)^  {name}\)\n(.*?)^    ;;$", script)
    assert match, f"launch/local.sh has no '{name})' branch"
    return match.group(1)


def test_the_demo_command_runs_the_demo_and_the_test_command_the_suite_and_the_site():
    script = (ROOT / "launch" / "local.sh").read_text()
    assert 'command="${1:-demo}"' in script, "the demo is the script's default job"
    assert re.search(r'exec "\$VENV/bin/jaxopt-rl" demo "\$@"', _case_branch(script, "demo"))
    test = _case_branch(script, "test")
    assert "build_docs" in test and "-m pytest" in test and "ruff\" check" in test
    assert test.index("build_docs") < test.index("-m pytest")


def test_every_page_that_shows_the_two_commands_shows_the_same_two():
    for page in PAGES:
        for block in fenced_blocks(page):
            shown = [c for c in _commands(block.code) if c.startswith("bash launch/local.sh ")]
            if set(shown) & set(TWO_COMMANDS) and len(shown) == 2:
                assert shown == list(TWO_COMMANDS), block.id
