"""The training mesh and the shardings of what crosses the train step's jit boundary.

One `jax.sharding.Mesh` with axes (data, fsdp, tensor), built from `MeshConfig` over all
devices of all processes (or, with `mesh.rollout_devices`, over all but the last ones, which form
the sampler's rollout mesh: `meshes_from_config`); the layout of parameters comes from the model's partition rules
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


def meshes_from_config(config: MeshConfig, devices: Any = None) -> tuple[Mesh, Mesh]:
    """`(training mesh, rollout mesh)`: the same mesh when `rollout_devices` is 0; else the
    last `rollout_devices` devices form a data-parallel rollout mesh (split by `tensor`) and the
    others the training mesh the config describes. Errors name `mesh.rollout_devices`."""
    from jaxopt_rl.config import ConfigError

    devices = list(jax.devices() if devices is None else devices)
    count = config.rollout_devices
    if count == 0:
        mesh = mesh_from_config(config, devices)
        return mesh, mesh
    if count >= len(devices):
        raise ConfigError(f"mesh.rollout_devices: {count} leaves no device of the "
                          f"{len(devices)} for the training mesh")
    if count % config.tensor:
        raise ConfigError(f"mesh.rollout_devices: {count} devices cannot be split by "
                          f"mesh.tensor={config.tensor}")
    try:
        train = mesh_from_config(config, devices[:-count])
    except ValueError as err:
        raise ConfigError(f"mesh.rollout_devices: the {len(devices) - count} training devices "
                          f"left do not fit the mesh: {err}") from None
    rollout = partitioning.make_mesh(data=-1, fsdp=1, tensor=config.tensor,
                                     devices=devices[-count:])
    return train, rollout


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
