"""Markers of the planning tests: they need a compiler for the platform they plan for.

libtpu comes with the test environment (`launch/local.sh` installs the `aot-tpu` extra and sets
JAXOPT_REQUIRE_LIBTPU=1, so a missing libtpu fails CI instead of reading as a row of skips);
elsewhere the TPU tests skip, saying how to install it. The CUDA plugin is optional (the
`aot-gpu` extra, several GB of NVIDIA libraries): its tests skip without it."""

from __future__ import annotations

import importlib.util
import os

import pytest


def installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:
        return False


requires_libtpu = pytest.mark.skipif(
    not installed("libtpu") and os.environ.get("JAXOPT_REQUIRE_LIBTPU") != "1",
    reason="libtpu is not installed: pip install -e '.[aot-tpu]'")
requires_cuda_plugin = pytest.mark.skipif(
    not (installed("jax_plugins.xla_cuda12") or installed("jax_plugins.xla_cuda13")),
    reason="JAX's CUDA plugin is not installed: pip install -e '.[aot-gpu]'")
