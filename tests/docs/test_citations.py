"""Every design citation in the code resolves inside the repository.

Docstrings, comments and configs cite the design pages as `docs/design/<page>.md §N`. This test
reads the code folders as text and fails on:

  * a citation of a page outside the repository (the old `spec/...` folder, `../shared/...`,
    the papers' text copies under `seeds/`), or a bare `spec §N` / `spec eq. N` with no page;
  * a design page named without its `docs/` path (`rewards.md §3`), or a `docs/` page that
    does not exist;
  * a `§N` (or `§N.M`) that the cited page has no heading for. A `§N` written alone refers to
    the one design page its file cites, and is an error in a file that cites none or several
    (a paper's own sections are written `paper §N` and are not checked);
  * an issue-tracker number (`issue 12`, `issues #3`, `#12`): the sentence should say what the
    issue asked for.

`find_problems` is a pure function of one file's text, so the rules are unit-tested on fake
citations below as well as run on the tree.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = ("jaxopt_rl", "sandbox_cluster", "benchmarks", "tests", "configs", "launch")
SUFFIXES = {".py", ".yaml", ".yml", ".sh", ".md", ".toml"}
# This file quotes bad citations on purpose, as test data; the site's own tests name docs pages
# as data.
EXCLUDED = {p.resolve() for p in Path(__file__).parent.glob("test_*.py")}
# The pages the design used to live in, by basename: named alone they point nowhere.
DESIGN_PAGES = {"index", "rewards", "sandbox-timing", "training", "dataset-eval", "simulator"}

SECTION = r"§\s*\d+(?:\.\d+)*(?:\s*[-–]\s*§?\s*\d+(?:\.\d+)*)?"
# Separators allowed between the sections of one citation ("§1, §5 and §6", "§2,\n# §6").
CHAIN = rf"(?P<chain>(?:(?:[\s,/#*]|and\b|or\b)*{SECTION})*)"
MD_PATH = re.compile(rf"(?<![\w/.-])(?P<path>(?:[\w.-]+/)*[\w.-]+\.md)\b{CHAIN}")
PAPER = re.compile(rf"\bpaper(?:'s)?\s*{CHAIN}", re.I)
SECTION_NUMBER = re.compile(r"\d+(?:\.\d+)*")
ANY_SECTION = re.compile(r"§\s*\d+(?:\.\d+)*")
OUTSIDE = re.compile(
    r"\.\./shared\b|/work/shared\b|\bshared/(?:spec|seeds)\b|(?<![\w.-])(?:\.\./)?seeds/"
    r"|(?<![\w.-])spec/"
)
BARE_SPEC = re.compile(r"\bspec(?:'s)?\s+(?:§|eq\.|step\b|[\w-]+\.md\b)", re.I)
ISSUE = re.compile(r"\bissues?[\s-]+#?\d+|(?<![\w&/\"'#-])#\d+\b", re.I)
HEADING = re.compile(r"^#{1,6}\s.*$", re.M)


def _line(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def page_sections(page: Path) -> set[str]:
    """The `§N` / `§N.M` labels of a page's headings."""
    found = set()
    for heading in HEADING.finditer(page.read_text()):
        found.update(m.group(0)[1:].strip() for m in ANY_SECTION.finditer(heading.group(0)))
    return found


def _cited_sections(chain: str) -> list[str]:
    return SECTION_NUMBER.findall(chain.replace("§", " "))


def find_problems(text: str, root: Path = ROOT) -> list[tuple[int, str]]:
    """`(line, message)` for every citation in `text` that does not resolve under `root`."""
    problems: list[tuple[int, str]] = []
    claimed: list[tuple[int, int]] = []  # spans of sections that belong to a page or a paper

    for match in OUTSIDE.finditer(text):
        problems.append((_line(text, match.start()),
                         f"{match.group(0)!r} points outside the repository"))
    for match in BARE_SPEC.finditer(text):
        problems.append((_line(text, match.start()),
                         f"{match.group(0)!r} cites the spec without a docs/ page"))
    for match in ISSUE.finditer(text):
        problems.append((_line(text, match.start()),
                         f"{match.group(0)!r}: say what the issue asked for, not its number"))

    for match in PAPER.finditer(text):
        claimed.append(match.span("chain"))

    for match in MD_PATH.finditer(text):
        path, chain = match.group("path"), match.group("chain")
        stem = Path(path).stem
        if not chain and not path.startswith("docs/") and stem not in DESIGN_PAGES:
            continue  # a Markdown file named for another reason (report.md, README.md)
        claimed.append(match.span("chain"))
        line = _line(text, match.start())
        if not path.startswith("docs/"):
            problems.append((line, f"{path!r} is not a docs/ page (write docs/design/{stem}.md)"))
            continue
        page = root / path
        if not page.is_file():
            problems.append((line, f"{path!r} does not exist"))
            continue
        headings = page_sections(page)
        for number in _cited_sections(chain):
            if number not in headings:
                problems.append((line, f"{path} has no heading for §{number}"))

    # A bare §N refers to the one page its file cites; with none or several it is ambiguous.
    pages = {m.group("path") for m in MD_PATH.finditer(text)
             if m.group("path").startswith("docs/") and (root / m.group("path")).is_file()}
    for match in ANY_SECTION.finditer(text):
        if any(start <= match.start() < end for start, end in claimed):
            continue
        line = _line(text, match.start())
        if len(pages) != 1:
            problems.append((line, f"{match.group(0)!r} names no page and its file cites "
                                   f"{len(pages)} (cite docs/design/<page>.md §N)"))
            continue
        (page,) = pages
        for number in _cited_sections(match.group(0)):
            if number not in page_sections(root / page):
                problems.append((line, f"{page} has no heading for §{number}"))
    return sorted(problems)


def _scanned_files() -> list[Path]:
    files = []
    for folder in SCANNED:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix in SUFFIXES and path.is_file() and path.resolve() not in EXCLUDED:
                files.append(path)
    return files


def test_every_citation_in_the_code_resolves_inside_the_repository():
    problems = []
    for path in _scanned_files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        problems += [f"{path.relative_to(ROOT)}:{line}: {message}"
                     for line, message in find_problems(text)]
    assert not problems, "unresolved citations:\n" + "\n".join(problems)


def test_the_docs_never_link_outside_the_repository():
    problems = []
    for path in sorted((ROOT / "docs").rglob("*.md")):
        for match in OUTSIDE.finditer(path.read_text()):
            problems.append(f"{path.relative_to(ROOT)}: {match.group(0)!r}")
    assert not problems, "\n".join(problems)


def test_every_design_page_numbers_its_sections():
    for name in sorted(DESIGN_PAGES - {"index"}):
        assert page_sections(ROOT / "docs" / "design" / f"{name}.md"), name


# ---- the rules on fake citations: the scan can fail ------------------------------------------


def _messages(text: str) -> list[str]:
    return [message for _, message in find_problems(text)]


def test_a_good_citation_passes():
    assert _messages("docs/design/rewards.md §3 and docs/design/sandbox-timing.md §1.13") == []
    assert _messages("(docs/design/rewards.md §1, §5 and §6; docs/design/training.md §1-2)") == []
    assert _messages("docs/design/dataset-eval.md §5.4-§5.7") == []
    assert _messages("the RiVER paper §4.3, §5.1, §6") == []
    assert _messages("writes report.md and README.md") == []
    assert _messages("docs/design/sandbox-timing.md §4; later a bare (§1.15)") == []


@pytest.mark.parametrize(("text", "expected"), [
    ("see spec/rewards.md §3", "points outside the repository"),
    ("see ../shared/spec/training.md", "points outside the repository"),
    ("(seeds/000_x.txt, l.12)", "points outside the repository"),
    ("the pass rule of spec simulator.md step 3", "cites the spec without a docs/ page"),
    ("sanitised by spec eq. 10", "cites the spec without a docs/ page"),
    ("sandbox-timing.md §4", "is not a docs/ page"),
    ("docs/design/nowhere.md §1", "does not exist"),
    ("docs/design/rewards.md §42", "has no heading for §42"),
    ("docs/design/rewards.md §1-§99", "has no heading for §99"),
    ("docs/design/sandbox-timing.md §1.99", "has no heading for §1.99"),
    ("a rule (§1.15) alone", "names no page"),
    ("docs/design/rewards.md §1; docs/design/training.md §1; then (§2) alone", "names no page"),
    ("docs/design/rewards.md §1, and later (§42) alone", "has no heading for §42"),
    ("fixed by issue 12", "say what the issue asked for"),
    ("see issues #7 and #8", "say what the issue asked for"),
    ("as asked in #12", "say what the issue asked for"),
])
def test_a_bad_citation_is_reported(text, expected):
    messages = _messages(text)
    assert any(expected in message for message in messages), messages


def test_strings_that_only_look_like_issues_pass():
    assert _messages('key = "infra_error#2"; name = "bench.txt#0"; colour = "#000000"') == []


def test_a_heading_defines_its_sections(tmp_path):
    page = tmp_path / "docs" / "design" / "page.md"
    page.parent.mkdir(parents=True)
    page.write_text("# Title\n\n## §1 One\n\ntext §9 in a paragraph\n\n### §1.2 Sub\n")
    assert page_sections(page) == {"1", "1.2"}
    assert find_problems("docs/design/page.md §1.2", root=tmp_path) == []
    assert find_problems("docs/design/page.md §9", root=tmp_path) == [
        (1, "docs/design/page.md has no heading for §9")]
