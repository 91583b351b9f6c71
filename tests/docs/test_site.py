"""The docs site's shape: every page is in the navigation, the build is strict and runs in CI,
the README stays short and its links resolve. (`launch/local.sh test` runs the build itself:
`mkdocs build --strict`; these checks keep that set-up from being weakened quietly.)"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
README_MAX_LINES = 220


def _mkdocs() -> dict:
    return yaml.safe_load((ROOT / "mkdocs.yml").read_text())


def _nav_pages(nav) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [page for item in nav for page in _nav_pages(item)]
    if isinstance(nav, dict):
        return [page for value in nav.values() for page in _nav_pages(value)]
    return []


def test_every_page_is_in_the_nav_once_and_every_nav_entry_exists():
    pages = _nav_pages(_mkdocs()["nav"])
    assert len(pages) == len(set(pages)), "a page is in the nav twice"
    on_disk = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert set(pages) == on_disk, (f"missing from the nav: {sorted(on_disk - set(pages))}; "
                                   f"not on disk: {sorted(set(pages) - on_disk)}")


def test_the_nav_has_the_guides_the_design_notes_and_the_references():
    pages = set(_nav_pages(_mkdocs()["nav"]))
    for name in ("index", "rewards", "sandbox-timing", "training", "dataset-eval", "simulator"):
        assert f"design/{name}.md" in pages
    assert {"index.md", "config.md", "api/index.md"} <= pages
    assert {p.relative_to(DOCS).as_posix() for p in (DOCS / "guides").glob("*.md")} <= pages


def test_the_build_is_strict_and_every_check_is_a_warning():
    config = _mkdocs()
    assert config["strict"] is True
    validation = config["validation"]
    assert validation["nav"] == {"omitted_files": "warn", "not_found": "warn",
                                 "absolute_links": "warn"}
    assert validation["links"] == {"not_found": "warn", "anchors": "warn",
                                   "absolute_links": "warn", "unrecognized_links": "warn"}
    snippets = next(e for e in config["markdown_extensions"]
                    if isinstance(e, dict) and "pymdownx.snippets" in e)
    assert snippets["pymdownx.snippets"]["check_paths"] is True


def test_ci_builds_the_site_strictly_and_the_docs_command_serves_it():
    script = (ROOT / "launch" / "local.sh").read_text()
    build = re.search(r"(?ms)^build_docs\(\) \{\n(.*?)^\}", script).group(1)
    command = next(line for line in build.splitlines() if "mkdocs\" build" in line)
    assert "--strict" in command
    # --quiet hides the warnings strict mode counts: the build would pass with a broken link.
    assert "-q" not in command.split() and "--quiet" not in command
    test_branch = re.search(r"(?ms)^  test\)\n(.*?)^    ;;$", script).group(1)
    assert "build_docs" in test_branch
    docs_branch = re.search(r"(?ms)^  docs\)\n(.*?)^    ;;$", script).group(1)
    assert 'mkdocs" serve' in docs_branch


def test_the_docs_extra_is_installed_by_the_set_up():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"]
    names = {re.split(r"[\[<>=!~ ]", requirement)[0] for requirement in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "mkdocstrings"} <= names
    assert "mkdocstrings[python]" in " ".join(extras["docs"])
    install = re.search(r'pip install -q -e "\.\[([a-z,-]+)\]"',
                        (ROOT / "launch" / "local.sh").read_text()).group(1)
    assert "docs" in install.split(",")


def test_readme_is_short():
    lines = (ROOT / "README.md").read_text().count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; the budget is {README_MAX_LINES}"


def _links(text: str) -> list[str]:
    return re.findall(r"\]\(([^)\s]+)\)", text)


def test_readme_links_and_images_resolve():
    for target in _links((ROOT / "README.md").read_text()):
        if re.match(r"[a-z]+://", target):
            continue
        path = target.split("#", 1)[0]
        assert (ROOT / path).exists(), f"README links to {target}, which does not exist"


def test_readme_and_the_home_page_point_to_every_guide():
    guides = {p.name for p in (DOCS / "guides").glob("*.md")}
    readme = {Path(t).name for t in _links((ROOT / "README.md").read_text())
              if t.startswith("docs/guides/")}
    home = {Path(t.split("#")[0]).name for t in _links((DOCS / "index.md").read_text())
            if t.startswith("guides/")}
    assert guides <= readme, f"README does not link {sorted(guides - readme)}"
    assert guides <= home, f"docs/index.md does not link {sorted(guides - home)}"


def test_readme_cites_the_two_papers_and_says_how_to_serve_the_site():
    readme = (ROOT / "README.md").read_text()
    assert "*Reinforcement Learning for Code Optimization.*" in readme
    assert "*Reinforcement Learning without Ground-Truth Solutions Can Improve" in readme
    assert "bash launch/local.sh docs" in readme


def test_guides_link_the_figures_that_exist():
    figures = {p.relative_to(DOCS).as_posix() for p in (DOCS / "figures").rglob("*.png")}
    linked = set()
    for page in DOCS.rglob("*.md"):
        for target in _links(page.read_text()):
            resolved = (page.parent / target.split("#")[0]).resolve()
            if resolved.suffix == ".png" and DOCS in resolved.parents:
                linked.add(resolved.relative_to(DOCS).as_posix())
    assert figures <= linked, f"figures no page shows: {sorted(figures - linked)}"
