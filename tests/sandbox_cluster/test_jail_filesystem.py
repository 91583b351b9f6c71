"""A jail sees no file of the project's data, nor its installed packages, under any install
layout.

The project is installed non-editable (a wheel built from this checkout, pip, offline) into
Python prefixes outside /usr, as a fleet node built without the repository's venv would have it:
- "venv": a `venv --copies` of the system interpreter (its own executable and pyvenv.cfg under
  the prefix, the standard library in /usr), the project in the venv's site-packages;
- "prefix": a Python prefix of its own (the system interpreter copied to <prefix>/bin, its
  standard library under <prefix>/lib), the project installed where this interpreter's pip puts
  it and, as an upstream build would, into <prefix>/lib/pythonX.Y/site-packages.
The interpreter of each layout runs the jail, and a hostile program in it walks every directory
it can see, tries to open every installed file by path, looks for a copy of every data file by
name and content, and imports the project's packages. The same program without a jail (the
no-jail backend, walking only the prefix) finds them all, so the check can fail.
Layouts live under /var/tmp: a jail mounts its own tmpfs over /tmp.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.jails import JailUnavailable
from sandbox_cluster.pool import LocalPool
from tests.sandbox_cluster.jail_required import no_jail

pytestmark = pytest.mark.hostile
REPO = Path(__file__).resolve().parents[2]
PROGRAM = (Path(__file__).parent / "hostile" / "read_installed_data.py").read_text()
PACKAGES = ("jaxopt_rl", "sandbox_cluster")
# Files the project ships as package data that must be among what the install wrote.
SHIPPED = ("jaxopt_rl/data/mini/built/tests.parquet", "jaxopt_rl/data/mini/built/problems.jsonl",
           "jaxopt_rl/model/assets/tokenizer.json")
LIMITS = Limits(time_s=60.0, memory_mb=512, output_mb=1)


@dataclass(frozen=True)
class Layout:
    name: str
    root: Path
    python: str
    files: tuple[str, ...]  # every file the installs wrote: the packages and their metadata

    def spec(self, roots: list[str]) -> str:
        digests: dict[str, list[str]] = {}
        for path in self.files:
            if not path.endswith((".py", ".pyc", "RECORD", "INSTALLER", "WHEEL", "REQUESTED")):
                digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
                digests.setdefault(os.path.basename(path), []).append(digest)
        return json.dumps({"paths": list(self.files), "digests": digests,
                           "modules": list(PACKAGES), "roots": roots})


def _run(*argv: str | Path) -> None:
    done = subprocess.run([str(a) for a in argv], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, f"{argv}: {done.stdout[-2000:]} {done.stderr[-2000:]}"


def _system_python() -> str:
    found = shutil.which("python3", path="/usr/bin:/bin")
    if found is None:
        pytest.skip("no system python3 under /usr/bin to build install layouts from")
    return os.path.realpath(found)


def _installed_files(root: Path) -> tuple[str, ...]:
    files = []
    for dirpath, _, filenames in os.walk(root):
        top = Path(dirpath).relative_to(root).parts
        if any(part in PACKAGES or part.startswith("jaxopt_rl-") for part in top):
            files += [os.path.join(dirpath, name) for name in filenames]
    return tuple(sorted(files))


@pytest.fixture(scope="session")
def wheel():
    """A wheel of this checkout (sources copied out first, so no build/ appears in the work
    tree), built offline with the test environment's setuptools."""
    work = Path(tempfile.mkdtemp(prefix="jail-fs-wheel-", dir="/var/tmp"))
    source = work / "src"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    for package in PACKAGES:
        shutil.copytree(REPO / package, source / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    _run(sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-index",
         "--no-build-isolation", "-w", work / "dist", source)
    yield next((work / "dist").glob("*.whl"))
    shutil.rmtree(work, ignore_errors=True)


def _pip_install(python: str | Path, wheel: Path, *extra: str | Path) -> None:
    _run(sys.executable, "-m", "pip", "--python", python, "install", "-q", "--no-deps",
         "--no-index", *extra, wheel)


@pytest.fixture(scope="session", params=["venv", "prefix"])
def layout(request, wheel: Path):
    system = _system_python()
    root = Path(tempfile.mkdtemp(prefix=f"jail-fs-{request.param}-", dir="/var/tmp"))
    root.chmod(0o755)  # an unprivileged uid must reach the interpreter
    if request.param == "venv":
        _run(system, "-m", "venv", "--copies", "--without-pip", root)
        python = root / "bin" / "python3"
        _pip_install(python, wheel)
    else:
        prefix, stdlib = json.loads(subprocess.run(
            [system, "-c", "import json, sys, sysconfig; "
             "print(json.dumps([sys.prefix, sysconfig.get_path('stdlib')]))"],
            capture_output=True, text=True, check=True).stdout)
        (root / "bin").mkdir()
        python = root / "bin" / os.path.basename(system)
        shutil.copy2(system, python)
        own_stdlib = root / os.path.relpath(stdlib, prefix)  # lib/python3.X
        own_stdlib.mkdir(parents=True)
        for entry in os.listdir(stdlib):  # the stdlib, without the distribution's packages
            if entry not in ("site-packages", "dist-packages", "EXTERNALLY-MANAGED"):
                (own_stdlib / entry).symlink_to(os.path.join(stdlib, entry))
        _pip_install(python, wheel)
        _pip_install(python, wheel, "--target", own_stdlib / "site-packages")
    files = _installed_files(root)
    for shipped in SHIPPED:
        assert any(path.endswith("/" + shipped) for path in files), (shipped, root)
    yield Layout(request.param, root, str(python), files)
    shutil.rmtree(root, ignore_errors=True)


def _look(backend: str, layout: Layout, roots: list[str]):
    try:
        pool = LocalPool(backend=backend, slots=1, prestart=False, python=layout.python)
    except JailUnavailable as exc:
        no_jail(f"{backend} cannot run here with {layout.python}: {exc}")
    with pool:
        result = pool.run(PROGRAM, [TestCase(layout.spec(roots))], LIMITS)[0]
    return result, result.stdout.decode("utf-8", "replace")


@pytest.mark.parametrize("backend", ["nsjail", "bwrap"])
def test_no_project_data_visible_in_a_jail(layout: Layout, backend: str) -> None:
    result, stdout = _look(backend, layout, ["/"])
    assert result.status is Status.SUCCESS, (result, stdout)
    assert stdout.startswith("nothing visible among "), (layout.name, stdout)
    # The walk saw the jail's world (the standard library alone has over a thousand files).
    assert int(stdout.split()[3]) > 1000, stdout


def test_the_search_finds_the_installed_data_without_a_jail(layout: Layout) -> None:
    """The control: with no jail, the same program finds every installed file, copies of the
    data files by name and content, and imports the packages."""
    result, stdout = _look("nojail", layout, [str(layout.root)])
    assert result.status is Status.SUCCESS, (result, stdout)
    assert stdout.startswith(f"LEAK {len(layout.files)} readable, "), stdout
    found = int(stdout.split()[3])
    assert found >= len(SHIPPED), stdout
    assert f"imported {list(PACKAGES)}" in stdout, stdout
