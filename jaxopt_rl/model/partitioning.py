"""Partition rules: the one place that decides how parameters, activations and the KV cache are
laid out on the device mesh.

The mesh has three named axes: ``data`` (replicas), ``fsdp`` (replicas whose parameters are
sharded between them) and ``tensor`` (heads / MLP width / vocabulary split inside a layer).
Sharding is decided in two steps, both data in this file:

1. `PARAM_LOGICAL_AXES` names the *logical* axes of every parameter, keyed by a regular
   expression on its path (``layers/3/self_attn/q_proj/kernel``); `CACHE_LOGICAL_AXES` does the
   same for each KV-cache array. A parameter that matches no rule is an error, never silently
   replicated.
2. `ShardingRules` maps each logical axis to mesh axes. `DEFAULT_RULES` is the training layout
   (FSDP on the model width, tensor parallelism on heads/MLP/vocabulary, batch on data x fsdp);
   `SAMPLING_RULES` keeps parameters whole across `fsdp`, so decoding does no per-token
   all-gather, at the cost of memory. The sampler uses the training layout unless told otherwise
   (docs/design/training.md §4: sampling runs on the training mesh, laid out alike).

Activations. Inside a jitted step the model reads the layout it runs under from `layout`, a
trace-time context the step sets (`current_layout`): `constrain` pins an activation's logical
axes (rows over the batch axes) and kernels that XLA cannot partition (Pallas) take their
`jax.shard_map` specs from `activation_spec`. Without a layout (one device, tests) both are
no-ops.

Choice: a dimension that the chosen mesh axes do not divide is replicated along those axes (a
tiny test model on a big mesh still runs); `explain_fallbacks` lists where that happened
(`jaxopt-rl plan` reports it for the run it plans).
"""

from __future__ import annotations

import contextlib
import contextvars
import math
import re
from collections.abc import Iterator
from dataclasses import dataclass, fields
from typing import Any

import jax
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec

MESH_AXES = ("data", "fsdp", "tensor")

LogicalAxes = tuple[str | None, ...]

PARAM_LOGICAL_AXES: tuple[tuple[str, LogicalAxes], ...] = (
    (r"^embed_tokens/embedding$", ("vocab", "embed")),
    (r"/self_attn/q_proj/kernel$", ("embed", "heads")),
    (r"/self_attn/[kv]_proj/kernel$", ("embed", "kv_heads")),
    (r"/self_attn/q_proj/bias$", ("heads",)),
    (r"/self_attn/[kv]_proj/bias$", ("kv_heads",)),
    (r"/self_attn/o_proj/kernel$", ("heads", "embed")),
    (r"/mlp/(gate|up)_proj/kernel$", ("embed", "mlp")),
    (r"/mlp/(gate|up)_proj/bias$", ("mlp",)),
    (r"/mlp/down_proj/kernel$", ("mlp", "embed")),
    (r"/(o_proj|down_proj)/bias$", (None,)),
    (r"(^|/)(norm|input_layernorm|post_attention_layernorm|q_norm|k_norm)/scale$", (None,)),
    (r"^lm_head/kernel$", ("embed", "vocab")),
)

CACHE_LOGICAL_AXES: LogicalAxes = ("batch", "kv_heads", None, None)  # [B, K, S, H]


@dataclass(frozen=True)
class ShardingRules:
    """Which mesh axes each logical axis is split over (empty tuple: replicated)."""

    batch: tuple[str, ...] = ("data", "fsdp")
    embed: tuple[str, ...] = ("fsdp",)
    vocab: tuple[str, ...] = ("tensor",)
    heads: tuple[str, ...] = ("tensor",)
    kv_heads: tuple[str, ...] = ("tensor",)
    mlp: tuple[str, ...] = ("tensor",)
    # the token axis of the activations between layers (what remat keeps for the backward
    # pass): split over the tensor axis, whose chips would otherwise each hold the same copy
    # (sequence parallelism; XLA gathers it before the layer's projections)
    activation_length: tuple[str, ...] = ("tensor",)

    def __post_init__(self) -> None:
        for field in fields(self):
            for axis in getattr(self, field.name):
                if axis not in MESH_AXES:
                    raise ValueError(
                        f"ShardingRules.{field.name}: unknown mesh axis {axis!r}; use {MESH_AXES}"
                    )

    def mesh_axes(self, logical: str | None) -> tuple[str, ...]:
        return () if logical is None else getattr(self, logical)


DEFAULT_RULES = ShardingRules()
SAMPLING_RULES = ShardingRules(embed=())


def make_mesh(data: int = 1, fsdp: int = 1, tensor: int = 1, devices: Any = None) -> Mesh:
    """A ``(data, fsdp, tensor)`` mesh over `devices` (default: all); one size may be -1."""
    devices = list(jax.devices() if devices is None else devices)
    sizes = [data, fsdp, tensor]
    if sizes.count(-1) > 1 or any(size == 0 or size < -1 for size in sizes):
        raise ValueError(
            f"mesh sizes must be positive (one may be -1), got {dict(zip(MESH_AXES, sizes))}"
        )
    if -1 in sizes:
        known = math.prod(size for size in sizes if size != -1)
        if len(devices) % known:
            raise ValueError(f"{len(devices)} devices cannot be split by {known}")
        sizes[sizes.index(-1)] = len(devices) // known
    if math.prod(sizes) != len(devices):
        raise ValueError(
            f"mesh {dict(zip(MESH_AXES, sizes))} needs {math.prod(sizes)} devices, "
            f"have {len(devices)}"
        )
    grid = np.asarray(devices, dtype=object).reshape(sizes)
    return Mesh(grid, MESH_AXES, axis_types=(AxisType.Auto,) * len(MESH_AXES))


def param_path(keypath: tuple[Any, ...]) -> str:
    """``layers/3/self_attn/q_proj/kernel`` from a JAX key path into an `nnx.State`."""
    parts = []
    for key in keypath:
        if isinstance(key, jax.tree_util.DictKey):
            parts.append(str(key.key))
        elif isinstance(key, jax.tree_util.SequenceKey):
            parts.append(str(key.idx))
        elif isinstance(key, jax.tree_util.GetAttrKey) and key.name != "value":
            parts.append(key.name)
    return "/".join(parts)


def logical_axes(path: str) -> LogicalAxes:
    """The logical axes of the parameter at `path` (first matching rule)."""
    for pattern, axes in PARAM_LOGICAL_AXES:
        if re.search(pattern, path):
            return axes
    raise KeyError(f"no partition rule matches parameter {path!r}; add one to PARAM_LOGICAL_AXES")


def sharding_for(
    shape: tuple[int, ...], axes: LogicalAxes, mesh: Mesh, rules: ShardingRules = DEFAULT_RULES
) -> NamedSharding:
    """`NamedSharding` for an array with these logical axes, replicating indivisible dimensions."""
    return NamedSharding(mesh, _spec(shape, axes, mesh, rules)[0])


def param_shardings(state: Any, mesh: Mesh, rules: ShardingRules = DEFAULT_RULES) -> Any:
    """The tree of `state` (an `nnx.State`, abstract or concrete) with `NamedSharding` leaves."""

    def leaf_sharding(keypath, leaf):
        path = param_path(keypath)
        axes = logical_axes(path)
        if len(axes) != len(leaf.shape):
            raise ValueError(f"{path}: rule gives {len(axes)} axes for shape {tuple(leaf.shape)}")
        return sharding_for(tuple(leaf.shape), axes, mesh, rules)

    return jax.tree_util.tree_map_with_path(leaf_sharding, state)


def batch_sharding(mesh: Mesh, ndim: int, rules: ShardingRules = DEFAULT_RULES) -> NamedSharding:
    """Rows on the batch mesh axes, every other dimension replicated (callers keep B divisible)."""
    return NamedSharding(mesh, PartitionSpec(rules.batch or None, *([None] * (ndim - 1))))


def batch_shard_count(mesh: Mesh | None, rules: ShardingRules = DEFAULT_RULES) -> int:
    """How many ways the batch dimension is split (batches are padded to a multiple of this)."""
    if mesh is None:
        return 1
    return math.prod(mesh.shape[axis] for axis in rules.batch)


def explain_fallbacks(state: Any, mesh: Mesh, rules: ShardingRules = DEFAULT_RULES) -> list[str]:
    """One line per parameter dimension that is replicated because its mesh axes don't divide it."""
    lines = []
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        path = param_path(keypath)
        _, dropped = _spec(tuple(leaf.shape), logical_axes(path), mesh, rules)
        lines += [
            f"{path} dim {dim} ({size}) not divisible by {axes}" for dim, size, axes in dropped
        ]
    return lines


def _spec(
    shape: tuple[int, ...], axes: LogicalAxes, mesh: Mesh, rules: ShardingRules
) -> tuple[PartitionSpec, list[tuple[int, int, tuple[str, ...]]]]:
    entries: list[Any] = []
    dropped = []
    used: set[str] = set()
    for dim, (size, logical) in enumerate(zip(shape, axes, strict=True)):
        mesh_axes = tuple(axis for axis in rules.mesh_axes(logical) if axis not in used)
        ways = math.prod(mesh.shape[axis] for axis in mesh_axes)
        if not mesh_axes or ways == 1:
            entries.append(None)
        elif size % ways:
            dropped.append((dim, size, mesh_axes))
            entries.append(None)
        else:
            used.update(mesh_axes)
            entries.append(mesh_axes if len(mesh_axes) > 1 else mesh_axes[0])
    return PartitionSpec(*entries), dropped


_LAYOUT: contextvars.ContextVar[tuple[Mesh, ShardingRules] | None] = contextvars.ContextVar(
    "jaxopt_rl_layout", default=None
)


@contextlib.contextmanager
def layout(mesh: Mesh | None, rules: ShardingRules = DEFAULT_RULES) -> Iterator[None]:
    """Trace the model's activations for `mesh` and `rules` inside this block (None: no mesh)."""
    token = _LAYOUT.set(None if mesh is None else (mesh, rules))
    try:
        yield
    finally:
        _LAYOUT.reset(token)


def current_layout() -> tuple[Mesh, ShardingRules] | None:
    return _LAYOUT.get()


def activation_spec(shape: tuple[int, ...], axes: LogicalAxes) -> PartitionSpec:
    """The `PartitionSpec` of an activation with these logical axes under the current layout."""
    current = _LAYOUT.get()
    if current is None:
        return PartitionSpec()
    mesh, rules = current
    return _spec(tuple(shape), axes, mesh, rules)[0]


def constrain(array: jax.Array, axes: LogicalAxes) -> jax.Array:
    """`array` pinned to its logical axes under the current layout (unchanged without one)."""
    current = _LAYOUT.get()
    if current is None:
        return array
    mesh, rules = current
    return jax.lax.with_sharding_constraint(array, sharding_for(array.shape, axes, mesh, rules))
