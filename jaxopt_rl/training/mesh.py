"""The training mesh and the shardings of what crosses the train step's jit boundary.

One `jax.sharding.Mesh` with axes (data, fsdp, tensor), built from `MeshConfig` over all
devices of all processes; the layout of parameters comes from the model's partition rules
(`jaxopt_rl.model.partitioning`), never from a `PartitionSpec` written here. A train batch
`[U, R, L]` (microbatches, rows, positions) keeps U whole and splits the rows over the rules'
batch axes, so every microbatch of the scan is spread over all replicas.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from jaxopt_rl.model import partitioning
from jaxopt_rl.training.config import MeshConfig


def mesh_from_config(config: MeshConfig, devices: Any = None) -> Mesh:
    """The (data, fsdp, tensor) mesh the config describes, over `devices` (default: all)."""
    return partitioning.make_mesh(config.data, config.fsdp, config.tensor, devices=devices)


def replicated(mesh: Mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def microbatch_sharding(
    mesh: Mesh, rows_per_microbatch: int, rules: partitioning.ShardingRules
) -> NamedSharding:
    """`[U, R, L]` arrays: U replicated, R over the batch axes; R must divide evenly."""
    shards = partitioning.batch_shard_count(mesh, rules)
    if rows_per_microbatch % shards:
        raise ValueError(
            f"grpo.rows / grpo.microbatches = {rows_per_microbatch} rows per microbatch cannot "
            f"be split over the {shards} batch shards of mesh {dict(mesh.shape)}; use a multiple"
        )
    return NamedSharding(mesh, PartitionSpec(None, rules.batch or None, None))


def put_global(tree: Any, sharding: NamedSharding) -> Any:
    """Host arrays (the same full arrays on every process) as global arrays with `sharding`."""
    return jax.tree.map(
        lambda a: jax.make_array_from_callback(a.shape, sharding, lambda index: a[index]), tree
    )
