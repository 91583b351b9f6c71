"""sandbox_cluster installs and runs on CPU sandbox nodes without JAX or NumPy: importing any
of its modules (the pool and the jails in particular) must not pull either in."""

from __future__ import annotations

import json
import subprocess
import sys

PROBE = """
import importlib, json, pkgutil, sys
import sandbox_cluster
names = ["sandbox_cluster"] + [m.name for m in pkgutil.walk_packages(
    sandbox_cluster.__path__, "sandbox_cluster.")]
for name in names:
    importlib.import_module(name)
heavy = sorted(m for m in sys.modules if m.split(".")[0] in ("jax", "jaxlib", "numpy", "flax"))
print(json.dumps({"imported": names, "heavy": heavy}))
"""


def test_importing_the_sandbox_pulls_in_neither_jax_nor_numpy() -> None:
    completed = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True,
                               check=True, timeout=120)
    report = json.loads(completed.stdout)
    assert {"sandbox_cluster.pool", "sandbox_cluster.jails.nsjail",
            "sandbox_cluster.harness"} <= set(report["imported"])
    assert report["heavy"] == []


def test_the_probe_would_notice_numpy() -> None:
    completed = subprocess.run([sys.executable, "-c",
                                "import numpy, sys; print('numpy' in sys.modules)"],
                               capture_output=True, text=True, check=True, timeout=60)
    assert completed.stdout.strip() == "True"
