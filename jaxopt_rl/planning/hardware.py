"""The accelerators a run can be planned for, and the compile-only devices that stand for them.

This module owns:

  CHIPS              the chips (TPU v4, v5e, v5p, v6e; NVIDIA H100 SXM 80 GB, H200 SXM 141 GB)
  parse_slice        the slice names users type ("v5p-32", "v5litepod-8", "h100x16") -> `Slice`,
                     with libtpu's topology name ("v5p:2x2x4") or JAX's GPU topology ("1x2x8")
  gpu_target_config  the text of XLA's `stream_executor.GpuTargetConfigProto` for a GPU: what
                     JAX needs to compile for a GPU on a machine without one
  compile_devices    a slice's compile-only devices, for `jax.jit(f).lower(...).compile()`

Where the figures come from:

- Peak dense bf16 FLOP/s and HBM bandwidth: the Cloud TPU documentation of each generation
  (v4: 275 TFLOP/s, 1,228 GB/s; v5e: 197 TFLOP/s, 819 GB/s; v5p: 459 TFLOP/s, 2,765 GB/s; v6e:
  918 TFLOP/s, 1,640 GB/s) and NVIDIA's datasheets (H100 SXM and H200 SXM: 989 TFLOP/s dense
  bf16, the datasheets' 1,979 being with 2:4 sparsity; 3.35 TB/s and 4.8 TB/s).
- TPU HBM: what libtpu's compiler offers a program on one chip, measured with libtpu 0.0.42.1
  (jax 0.10.2). A compile-only device has no `memory_stats()` ("only supported for addressable
  PjRt devices") and its memories (`default_memory()`, `addressable_memories()`: device,
  pinned_host, unpinned_host) carry no size; but a program too large for a chip fails to compile
  with "Used X of Y hbm" and a "reserved" figure, and the largest output that still compiles
  pins Y down to 2.5 KiB: v4 30.75 GiB (32 GiB less 1,283 MiB; per megacore chip), v5p
  95.74 GiB (96 GiB less 263 MiB), v5e 15.75 GiB (16 GiB less 258 MiB), v6e 31.25 GiB (32 GiB
  less 772 MiB). These are what a plan can fill, so `Chip.hbm_bytes` holds them rather than the
  documentation's 32 GiB, 95 GB, 16 GiB and 32 GiB; `tests/planning/test_hardware.py` checks them
  against the installed libtpu.
- GPU memory: the capacity nvidia-smi reports, 81,559 MiB (H100 SXM "80 GB") and 143,771 MiB
  (H200 SXM "141 GB"). XLA compiles for a GPU without checking its memory; JAX's allocator
  takes 75% of it by default at run time (`XLA_PYTHON_CLIENT_MEM_FRACTION`).
- GPU target description: SM count, clock and L2 from the datasheets and NVIDIA's Hopper
  architecture whitepaper; the per-SM and per-block limits are CUDA's for compute capability 9.0.

jax is imported inside the functions that need it, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import importlib.util
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import jax

__all__ = [
    "CHIPS",
    "Chip",
    "MissingToolchain",
    "Slice",
    "compile_devices",
    "gpu_target_config",
    "parse_slice",
]

_GiB = 2**30
_MiB = 2**20


@dataclass(frozen=True)
class Chip:
    """One accelerator chip (a TPU chip, or one GPU) and the figures a plan needs of it."""

    name: str  # "v5p", "h100"
    platform: str  # "tpu" or "cuda"
    hbm_bytes: int  # per chip: what a program can use (see the module docstring)
    peak_bf16_flops: float  # dense FLOP/s per chip
    hbm_bytes_per_s: float
    source: str  # where the figures come from


_TPU_DOCS = "Cloud TPU {} documentation (FLOP/s, bandwidth); HBM: libtpu 0.0.42.1's compiler"
CHIPS: dict[str, Chip] = {
    chip.name: chip
    for chip in (
        # v4 runs as megacore (one JAX device per chip, both TensorCores), as on Cloud TPU v4:
        # the compiler's reserve is larger than the later generations'.
        Chip("v4", "tpu", 32 * _GiB - 1283 * _MiB, 275e12, 1228e9,
             _TPU_DOCS.format("v4") + " (30.75 GiB of the documented 32 GiB)"),
        Chip("v5e", "tpu", 16 * _GiB - 258 * _MiB, 197e12, 819e9,
             _TPU_DOCS.format("v5e") + " (15.75 GiB of the documented 16 GiB)"),
        Chip("v5p", "tpu", 96 * _GiB - 263 * _MiB, 459e12, 2765e9,
             _TPU_DOCS.format("v5p") + " (95.74 GiB; the documentation gives 95)"),
        Chip("v6e", "tpu", 32 * _GiB - 772 * _MiB, 918e12, 1640e9,
             _TPU_DOCS.format("v6e") + " (31.25 GiB of the documented 32 GiB)"),
        Chip("h100", "cuda", 81559 * _MiB, 989e12, 3.35e12,
             "NVIDIA H100 SXM datasheet (80 GB); memory as nvidia-smi reports it (81,559 MiB)"),
        Chip("h200", "cuda", 143771 * _MiB, 989e12, 4.8e12,
             "NVIDIA H200 SXM datasheet (141 GB); memory as nvidia-smi reports it (143,771 MiB)"),
    )
}


@dataclass(frozen=True)
class Slice:
    """A set of chips a run is planned for, as the user named it.

    `topology` is libtpu's name for a TPU slice ("v5p:2x2x4": generation, then the chips along
    each axis of the torus or mesh) and JAX's cuda topology for GPUs ("1x<nodes>x<gpus per
    node>": one partition). `nodes` counts hosts: a v4 or v5p host holds 4 chips (2x2x1); a v5e
    or v6e host holds the whole slice up to 8 chips (a single-host machine type) and 4 chips
    (2x2) in a larger slice; a GPU node holds up to 8 GPUs.
    """

    name: str
    chip: Chip
    chips: int
    topology: str
    nodes: int
    gpus_per_node: int = 0  # GPUs only


# Cloud TPU slice names -> libtpu. Shapes count chips along each axis. libtpu 0.0.42.1 accepts the
# prefixes "v4", "v5p", "v5e" and "v6e" (device_kind "TPU v4", "TPU v5", "TPU v5 lite",
# "TPU v6 lite") and refuses "v5litepod", "v5lite", "v6lite" and "TPU_v4" ("Invalid TPU external
# name"), so "v5litepod-8" becomes "v5e:2x4".
_SHAPES_3D = {4: "2x2x1", 8: "2x2x2", 16: "2x2x4", 32: "2x4x4", 64: "4x4x4", 128: "4x4x8",
              256: "4x8x8", 512: "8x8x8"}
_SHAPES_2D = {1: "1x1", 4: "2x2", 8: "2x4", 16: "4x4", 32: "4x8", 64: "8x8", 128: "8x16",
              256: "16x16"}


@dataclass(frozen=True)
class _TpuFamily:
    chip: str  # key of CHIPS
    libtpu: str  # the generation prefix libtpu accepts
    counts_cores: bool  # the N of "<name>-N" counts TensorCores (2 per chip), not chips
    shapes: dict[int, str]  # chips -> shape
    options: tuple[tuple[str, str], ...] = ()  # further libtpu topology options


_TPU_FAMILIES = {
    # libtpu makes a v4 chip two devices (one per TensorCore) unless asked for megacore, the
    # mode Cloud TPU v4 runs JAX in (4 devices on a v4-8). v5p is megacore already.
    "v4": _TpuFamily("v4", "v4", True, _SHAPES_3D, (("chip_config_name", "megacore"),)),
    "v5p": _TpuFamily("v5p", "v5p", True, _SHAPES_3D),
    "v5e": _TpuFamily("v5e", "v5e", False, _SHAPES_2D),
    "v5litepod": _TpuFamily("v5e", "v5e", False, _SHAPES_2D),
    "v6e": _TpuFamily("v6e", "v6e", False, _SHAPES_2D),
}
_GPU_SIZES = "1, 2, 4 or a multiple of 8"


def _sizes(family: _TpuFamily) -> str:
    scale = 2 if family.counts_cores else 1
    return ", ".join(str(scale * chips) for chips in family.shapes)


def _accepted_forms() -> str:
    tpu = [f"{name}-N (N {'TensorCores, 2 per chip' if f.counts_cores else 'chips'}: "
           f"{_sizes(f)})" for name, f in _TPU_FAMILIES.items()]
    return "; ".join([*tpu, f"h100xN, h200xN (N GPUs, 8 per node: {_GPU_SIZES})"])


def parse_slice(name: str) -> Slice:
    """The slice a user named: "v4-N", "v5p-N" (N TensorCores), "v5e-N", "v5litepod-N",
    "v6e-N" (N chips), "h100xN", "h200xN" (N GPUs). Anything else raises `ValueError` naming
    the input and the accepted forms and sizes."""
    key = name.strip().lower()
    if match := re.fullmatch(r"(v4|v5p|v5e|v5litepod|v6e)-(\d+)", key):
        prefix, count = match.group(1), int(match.group(2))
        family = _TPU_FAMILIES[prefix]
        chips, odd = divmod(count, 2) if family.counts_cores else (count, 0)
        if odd or chips not in family.shapes:
            unit = "TensorCores (2 per chip)" if family.counts_cores else "chips"
            raise ValueError(f"unknown slice {name!r}: {prefix}-N counts {unit}; N must be one "
                             f"of {_sizes(family)}")
        single_host = not family.counts_cores and chips <= 8
        return Slice(name=name, chip=CHIPS[family.chip], chips=chips,
                     topology=f"{family.libtpu}:{family.shapes[chips]}",
                     nodes=1 if single_host else chips // 4)
    if match := re.fullmatch(r"(h100|h200)x(\d+)", key):
        gpus = int(match.group(2))
        if gpus not in (1, 2, 4) and (gpus == 0 or gpus % 8):
            raise ValueError(f"unknown slice {name!r}: {match.group(1)}xN counts GPUs, 8 per "
                             f"node; N must be {_GPU_SIZES}")
        nodes, per_node = max(1, gpus // 8), min(gpus, 8)
        return Slice(name=name, chip=CHIPS[match.group(1)], chips=gpus,
                     topology=f"1x{nodes}x{per_node}", nodes=nodes, gpus_per_node=per_node)
    raise ValueError(f"unknown slice {name!r}: accepted forms are {_accepted_forms()}")


@dataclass(frozen=True)
class _GpuCard:
    """What XLA's GPU target description needs of a card beyond its `Chip`."""

    compute_capability: tuple[int, int]
    sms: int
    clock_ghz: float  # boost clock
    l2_bytes: int


_GPU_CARDS = {
    # H100 SXM5: 132 SMs, 1.98 GHz boost, 50 MB L2 (NVIDIA's Hopper whitepaper).
    "h100": _GpuCard((9, 0), 132, 1.98, 50 * _MiB),
    # H200 SXM: the same GH100 configuration with HBM3e, so 132 SMs and 1.98 GHz. Its datasheet
    # gives no L2 size; we take the H100 SXM5's 50 MB (the full GH100's 60 MB is not enabled on
    # the H100 and, as far as we know, not on the H200 either). Not verified on a card.
    "h200": _GpuCard((9, 0), 132, 1.98, 50 * _MiB),
}

# CUDA's limits for compute capability 9.0 (the CUDA C++ Programming Guide's table of
# compute-capability features), the same on every Hopper card.
_SM90_LIMITS = {
    "fpus_per_core": 128,  # FP32 lanes per SM
    "threads_per_block_limit": 1024,
    "threads_per_warp": 32,
    "threads_per_core_limit": 2048,
    "shared_memory_per_block": 48 * 1024,
    "shared_memory_per_block_optin": 227 * 1024,
    "shared_memory_per_core": 228 * 1024,
    "registers_per_core_limit": 65536,
    "registers_per_block_limit": 65536,
    "block_dim_limit_x": 2**31 - 1,
    "block_dim_limit_y": 65535,
    "block_dim_limit_z": 65535,
    "thread_dim_limit_x": 1024,
    "thread_dim_limit_y": 1024,
    "thread_dim_limit_z": 64,
}
# The cuDNN the compiled program will meet, when jax[cuda12] has not installed one to read.
_DEFAULT_CUDNN = (9, 8)


def _cudnn_version() -> tuple[int, int]:
    """The installed cuDNN wheel's major and minor version: the GPU machines install the same
    `jax[cuda12]`, so they run the cuDNN this one has (XLA picks cuDNN fusions by version)."""
    try:
        major, minor = importlib.metadata.version("nvidia-cudnn-cu12").split(".")[:2]
        return int(major), int(minor)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        return _DEFAULT_CUDNN


def gpu_target_config(chip: Chip) -> str:
    """The text form of XLA's `stream_executor.GpuTargetConfigProto` for one GPU of `chip`:
    memory size and bandwidth from the `Chip`, SMs, clock and L2 from the card's table, limits
    of its compute capability."""
    if chip.platform != "cuda" or chip.name not in _GPU_CARDS:
        raise ValueError(f"no GPU target description for chip {chip.name!r}: "
                         f"known GPUs are {', '.join(_GPU_CARDS)}")
    card = _GPU_CARDS[chip.name]
    major, minor = card.compute_capability
    info = {
        "core_count": card.sms,
        **_SM90_LIMITS,
        "memory_bandwidth": round(chip.hbm_bytes_per_s),
        "l2_cache_size": card.l2_bytes,
        "clock_rate_ghz": card.clock_ghz,
        "device_memory_size": chip.hbm_bytes,
    }
    dnn_major, dnn_minor = _cudnn_version()
    return "\n".join([
        "gpu_device_info {",
        f"  cuda_compute_capability {{ major: {major} minor: {minor} }}",
        *(f"  {field}: {value}" for field, value in info.items()),
        "}",
        'platform_name: "CUDA"',
        f"dnn_version_info {{ major: {dnn_major} minor: {dnn_minor} }}",
        "",
    ])


class MissingToolchain(RuntimeError):
    """The compiler for a slice's platform is not installed: libtpu for TPU, JAX's CUDA plugin
    for GPUs. The message says what to install."""


# The import names of JAX's CUDA PJRT plugins (`jax[cuda12]`, `jax[cuda13]`).
_CUDA_PLUGINS = ("jax_plugins.xla_cuda12", "jax_plugins.xla_cuda13")


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # the parent package (`jax_plugins`) is absent
        return False


def _missing(platform: str) -> MissingToolchain:
    import jax

    if platform == "tpu":
        what, extra, wheel = "libtpu", "aot-tpu", "tpu"
    else:
        what, extra, wheel = "JAX's CUDA plugin", "aot-gpu", "cuda12"
    return MissingToolchain(
        f"compiling for {platform.upper()} needs {what}, which is not installed: run "
        f"`pip install -e '.[{extra}]'` (it installs jax[{wheel}]=={jax.__version__})")


# libtpu's start-up on a machine with no TPU. It describes the machine it runs on, finds no
# accelerator type and no worker hostnames, and prints warnings and an INVALID_ARGUMENT error that
# do not concern a compile-only topology: telling it the truth (one host, this one) silences them
# and compiles the same programs (checked: identical compiled text for v5p, v6e and v4 slices).
# And it takes /tmp/libtpu_lockfile, so that two processes never drive one TPU; with no TPU there
# is nothing to guard, and the lock would fail every other process that plans at the same time
# (a second pytest worker, a second planning script) with "ABORTED: Internal error when accessing
# libtpu multi-process lockfile". ALLOW_MULTIPLE_LIBTPU_LOAD=1 skips the lock.
_NO_TPU_ENV = {"TPU_WORKER_HOSTNAMES": "localhost", "TPU_HOST_BOUNDS": "1,1,1",
               "ALLOW_MULTIPLE_LIBTPU_LOAD": "1"}


@contextlib.contextmanager
def _libtpu_without_tpu() -> Iterator[None]:
    """Set `_NO_TPU_ENV` (where unset) while libtpu starts, on a machine with no TPU: JAX sets
    TPU_SKIP_MDS_QUERY=1 at import when it finds no TPU chip. On a TPU VM libtpu describes the
    machine from its metadata server and guards its chips with the lock: nothing is touched."""
    import jax  # noqa: F401  (sets TPU_SKIP_MDS_QUERY)

    added = [] if os.environ.get("TPU_SKIP_MDS_QUERY") != "1" else [
        var for var in _NO_TPU_ENV if var not in os.environ]
    os.environ.update({var: _NO_TPU_ENV[var] for var in added})
    try:
        yield
    finally:
        for var in added:
            os.environ.pop(var, None)


def _tpu_options(slice_: Slice) -> dict[str, object]:
    """libtpu's topology options for a slice: the chips of one host, and the family's own."""
    dims = [int(d) for d in slice_.topology.split(":")[1].split("x")]
    per_host = dims + [1] * (3 - len(dims)) if slice_.nodes == 1 else [2, 2, 1]
    family = next(f for f in _TPU_FAMILIES.values() if f.chip == slice_.chip.name)
    return {"chips_per_host_bounds": per_host, **dict(family.options)}


def compile_devices(slice_: Slice) -> list[jax.Device]:
    """The compile-only devices of `slice_`, one per chip (TPU, megacore) or GPU, in the order
    JAX gives them. Raises `MissingToolchain` when the platform's compiler is not installed."""
    from jax.experimental import topologies

    if slice_.chip.platform == "tpu":
        if not (_installed("libtpu") or os.path.isfile(os.environ.get("TPU_LIBRARY_PATH", ""))):
            raise _missing("tpu")
        with _libtpu_without_tpu():
            try:
                desc = topologies.get_topology_desc(slice_.topology, "tpu",
                                                    **_tpu_options(slice_))
            except RuntimeError as error:
                if "TPU support not installed" in str(error):
                    raise _missing("tpu") from error
                raise
        return list(desc.devices)

    if not any(_installed(plugin) for plugin in _CUDA_PLUGINS):
        raise _missing("cuda")
    try:
        desc = topologies.get_topology_desc(
            topology_name=slice_.chip.name, platform="cuda", topology=slice_.topology,
            target_config=gpu_target_config(slice_.chip))
    except NotImplementedError as error:  # JAX registered no CUDA plugin to make topologies
        if "topology not implemented" in str(error):
            raise _missing("cuda") from error
        raise
    return list(desc.devices)
