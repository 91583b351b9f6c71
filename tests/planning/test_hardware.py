"""The chips, the slice names and the compile-only devices of `jaxopt_rl.planning.hardware`.

Expected slices come from Cloud TPU's naming rules (v4-N and v5p-N count TensorCores, two per
chip, four chips per host; v5e-N, v5litepod-N and v6e-N count chips, one host up to 8) and from
8 GPUs per node, not from the module's tables. Tests that build TPU devices skip without libtpu,
those that build GPU devices without JAX's CUDA plugin.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from jaxopt_rl.planning import hardware
from jaxopt_rl.planning.hardware import (
    CHIPS,
    MissingToolchain,
    compile_devices,
    gpu_target_config,
    parse_slice,
)
from tests.planning.conftest import requires_cuda_plugin, requires_libtpu

needs_libtpu = requires_libtpu
needs_cuda_plugin = requires_cuda_plugin


@pytest.mark.parametrize(
    "name, chip, chips, topology, nodes, gpus_per_node",
    [
        ("v5p-8", "v5p", 4, "v5p:2x2x1", 1, 0),
        ("v5p-16", "v5p", 8, "v5p:2x2x2", 2, 0),
        ("v5p-32", "v5p", 16, "v5p:2x2x4", 4, 0),
        ("v5p-128", "v5p", 64, "v5p:4x4x4", 16, 0),
        ("v5p-1024", "v5p", 512, "v5p:8x8x8", 128, 0),
        ("v4-8", "v4", 4, "v4:2x2x1", 1, 0),
        ("v4-64", "v4", 32, "v4:2x4x4", 8, 0),
        ("v5e-1", "v5e", 1, "v5e:1x1", 1, 0),
        ("v5e-4", "v5e", 4, "v5e:2x2", 1, 0),
        ("v5litepod-8", "v5e", 8, "v5e:2x4", 1, 0),
        ("v5litepod-16", "v5e", 16, "v5e:4x4", 4, 0),
        ("v6e-8", "v6e", 8, "v6e:2x4", 1, 0),
        ("v6e-128", "v6e", 128, "v6e:8x16", 32, 0),
        ("v6e-256", "v6e", 256, "v6e:16x16", 64, 0),
        ("h100x1", "h100", 1, "1x1x1", 1, 1),
        ("h100x4", "h100", 4, "1x1x4", 1, 4),
        ("h100x16", "h100", 16, "1x2x8", 2, 8),
        ("h200x64", "h200", 64, "1x8x8", 8, 8),
    ],
)
def test_parse_slice_follows_the_naming_rules(name, chip, chips, topology, nodes, gpus_per_node):
    parsed = parse_slice(name)
    assert parsed.name == name
    assert parsed.chip is CHIPS[chip]
    assert (parsed.chips, parsed.topology, parsed.nodes, parsed.gpus_per_node) == (
        chips, topology, nodes, gpus_per_node)


def test_parse_slice_keeps_the_typed_name_and_ignores_case():
    parsed = parse_slice(" V5P-32")
    assert parsed.name == " V5P-32"
    assert parsed.topology == "v5p:2x2x4"


@pytest.mark.parametrize(
    "name, message",
    [
        ("v5p-30", "unknown slice 'v5p-30': v5p-N counts TensorCores (2 per chip); N must be one "
                   "of 8, 16, 32, 64, 128, 256, 512, 1024"),
        ("v4-4", "unknown slice 'v4-4': v4-N counts TensorCores (2 per chip); N must be one of 8,"),
        ("v5e-2", "unknown slice 'v5e-2': v5e-N counts chips; N must be one of 1, 4, 8, 16, 32, "
                  "64, 128, 256"),
        ("v6e-512", "unknown slice 'v6e-512': v6e-N counts chips; N must be one of 1, 4,"),
        ("h100x12", "unknown slice 'h100x12': h100xN counts GPUs, 8 per node; N must be 1, 2, 4 "
                    "or a multiple of 8"),
        ("h200x0", "unknown slice 'h200x0': h200xN counts GPUs"),
        ("tpu-8", "unknown slice 'tpu-8': accepted forms are v4-N (N TensorCores, 2 per chip: 8,"),
        ("a100x8", "unknown slice 'a100x8': accepted forms are"),
        ("v5p", "unknown slice 'v5p': accepted forms are"),
    ],
)
def test_bad_slice_names_are_refused_with_the_accepted_forms(name, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_slice(name)


def test_unknown_name_message_lists_every_form():
    with pytest.raises(ValueError) as error:
        parse_slice("v7-8")
    for form in ("v4-N", "v5p-N", "v5e-N", "v5litepod-N", "v6e-N", "h100xN", "h200xN"):
        assert form in str(error.value)


def test_chip_table():
    assert {c.platform for c in CHIPS.values()} == {"tpu", "cuda"}
    # nvidia-smi's capacities, in MiB.
    assert CHIPS["h100"].hbm_bytes == 81559 * 2**20
    assert CHIPS["h200"].hbm_bytes == 143771 * 2**20
    assert CHIPS["v5p"].peak_bf16_flops == 459e12 and CHIPS["v5p"].hbm_bytes_per_s == 2765e9
    assert CHIPS["h200"].hbm_bytes_per_s == 4.8e12
    # The compiler's HBM is a little under each generation's documented capacity.
    for name, documented_gib in (("v4", 32), ("v5e", 16), ("v5p", 96), ("v6e", 32)):
        assert 0.95 * documented_gib * 2**30 < CHIPS[name].hbm_bytes < documented_gib * 2**30
    assert all(chip.source for chip in CHIPS.values())


def test_importing_hardware_does_not_import_jax():
    code = "import sys, jaxopt_rl.planning.hardware; print('jax' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
    assert out.stdout.strip() == "False"


def _matmul_memory(devices):
    mesh = Mesh(np.array(devices[:1]), ("x",))
    x = jax.ShapeDtypeStruct((256, 256), jnp.bfloat16, sharding=NamedSharding(mesh, P()))
    return jax.jit(lambda a: a @ a).lower(x).compile().memory_analysis()


@needs_libtpu
@pytest.mark.parametrize("name, device_kind", [("v5e-4", "TPU v5 lite"), ("v5p-8", "TPU v5"),
                                               ("v4-8", "TPU v4"), ("v6e-1", "TPU v6 lite")])
def test_tpu_compile_devices(name, device_kind):
    slice_ = parse_slice(name)
    devices = compile_devices(slice_)
    assert len(devices) == slice_.chips  # one device per chip: v4 and v5p run megacore
    assert {d.platform for d in devices} == {"tpu"}
    assert {d.device_kind for d in devices} == {device_kind}
    assert len({d.process_index for d in devices}) == slice_.nodes


@needs_libtpu
def test_libtpu_accepts_every_slice_with_its_hosts():
    for name, family in hardware._TPU_FAMILIES.items():
        for chips in family.shapes:
            slice_ = parse_slice(f"{name}-{chips * (2 if family.counts_cores else 1)}")
            devices = compile_devices(slice_)
            assert len(devices) == slice_.chips, slice_.name
            assert len({d.process_index for d in devices}) == slice_.nodes, slice_.name


@needs_libtpu
def test_tpu_hbm_is_the_compilers():
    """A program whose output leaves 1 MiB of `hbm_bytes` free compiles; one whose output alone
    is `hbm_bytes` does not (its code needs room too)."""
    for name in ("v4-8", "v5e-1", "v5p-8", "v6e-1"):
        slice_ = parse_slice(name)
        sharding = NamedSharding(Mesh(np.array(compile_devices(slice_)[:1]), ("x",)), P())

        def compile_output(size, sharding=sharding):
            fill = jax.jit(lambda: jnp.zeros((size,), jnp.uint8), out_shardings=sharding)
            return fill.lower().compile()

        compile_output(slice_.chip.hbm_bytes - 2**20)
        with pytest.raises(jax.errors.JaxRuntimeError, match="RESOURCE_EXHAUSTED"):
            compile_output(slice_.chip.hbm_bytes)


@needs_libtpu
def test_tpu_matmul_compiles():
    memory = _matmul_memory(compile_devices(parse_slice("v5p-8")))
    assert memory.argument_size_in_bytes == 256 * 256 * 2
    assert memory.output_size_in_bytes == 256 * 256 * 2


@needs_libtpu
def test_libtpu_starts_quietly_and_leaves_the_environment_alone():
    """In a fresh process (libtpu starts once per process) nothing reaches stderr, and the
    variables set for libtpu's start are gone afterwards."""
    code = (
        "import os\n"
        "from jaxopt_rl.planning.hardware import compile_devices, parse_slice\n"
        "assert len(compile_devices(parse_slice('v5e-4'))) == 4\n"
        "print(sorted(v for v in ('TPU_WORKER_HOSTNAMES', 'TPU_HOST_BOUNDS',\n"
        "                         'ALLOW_MULTIPLE_LIBTPU_LOAD') if v in os.environ))\n"
    )
    env = {k: v for k, v in os.environ.items()
           if k not in ("TPU_WORKER_HOSTNAMES", "TPU_HOST_BOUNDS", "ALLOW_MULTIPLE_LIBTPU_LOAD")}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**env, "JAX_PLATFORMS": "cpu"}, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    assert out.stderr == ""


@needs_cuda_plugin
@pytest.mark.parametrize("name", ["h100x16", "h200x1"])
def test_gpu_compile_devices(name):
    slice_ = parse_slice(name)
    devices = compile_devices(slice_)
    assert len(devices) == slice_.chips
    assert {d.platform for d in devices} == {"gpu"}  # JAX's platform name for CUDA devices
    assert len({d.process_index for d in devices}) == slice_.nodes


@needs_cuda_plugin
def test_gpu_matmul_compiles():
    memory = _matmul_memory(compile_devices(parse_slice("h100x16")))
    assert memory.argument_size_in_bytes == 256 * 256 * 2
    assert memory.output_size_in_bytes == 256 * 256 * 2


@pytest.mark.parametrize("chip", ["h100", "h200"])
def test_gpu_target_config_carries_the_chip(chip):
    text = gpu_target_config(CHIPS[chip])
    fields = dict(re.findall(r"^\s*(\w+): (\S+)$", text, re.M))
    assert int(fields["device_memory_size"]) == CHIPS[chip].hbm_bytes
    assert int(fields["memory_bandwidth"]) == CHIPS[chip].hbm_bytes_per_s
    assert fields["core_count"] == "132"
    assert "cuda_compute_capability { major: 9 minor: 0 }" in text
    assert 'platform_name: "CUDA"' in text


@needs_cuda_plugin
def test_gpu_target_config_is_parsed_by_the_plugin():
    """The text is read, not ignored: the same text with one field misspelt is refused."""
    from jax.experimental import topologies

    text = gpu_target_config(CHIPS["h200"])
    kwargs = {"topology_name": "h200", "platform": "cuda", "topology": "1x1x1"}
    assert len(topologies.get_topology_desc(target_config=text, **kwargs).devices) == 1
    broken = text.replace("device_memory_size", "device_memory_bytes")
    with pytest.raises(jax.errors.JaxRuntimeError, match="GpuTargetConfigProto"):
        topologies.get_topology_desc(target_config=broken, **kwargs)


def test_gpu_target_config_refuses_a_tpu():
    with pytest.raises(ValueError, match="no GPU target description for chip 'v5p'"):
        gpu_target_config(CHIPS["v5p"])


def _hide(monkeypatch, *modules):
    """Make `importlib.util.find_spec` report `modules` as not installed."""
    real = importlib.util.find_spec

    def find_spec(name, *args, **kwargs):
        return None if name in modules else real(name, *args, **kwargs)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_missing_libtpu_says_what_to_install(monkeypatch):
    _hide(monkeypatch, "libtpu")
    monkeypatch.delenv("TPU_LIBRARY_PATH", raising=False)
    with pytest.raises(MissingToolchain) as error:
        compile_devices(parse_slice("v5p-8"))
    assert "pip install -e '.[aot-tpu]'" in str(error.value)
    assert f"jax[tpu]=={jax.__version__}" in str(error.value)
    assert isinstance(error.value, RuntimeError)


def test_missing_cuda_plugin_says_what_to_install(monkeypatch):
    _hide(monkeypatch, "jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")
    with pytest.raises(MissingToolchain) as error:
        compile_devices(parse_slice("h100x8"))
    assert "pip install -e '.[aot-gpu]'" in str(error.value)
    assert f"jax[cuda12]=={jax.__version__}" in str(error.value)
