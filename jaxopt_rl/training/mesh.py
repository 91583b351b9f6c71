"""The training mesh and the shardings of what crosses the train step's jit boundary.

One `jax.sharding.Mesh` with axes (data, fsdp, tensor), built from `MeshConfig` over all
devices of all processes (or, with `mesh.rollout_devices`, over all but those, which form the
sampler's rollout mesh: `meshes_from_config`, laid out by `mesh.rollout_layout`); the layout of parameters comes from the model's partition rules
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


def rollout_device_count(config: MeshConfig, mode: str, process_count: int,
                         device_count: int) -> int:
    """`mesh.rollout_devices`, or half of the devices for async over several processes."""
    if config.rollout_devices == 0 and mode == "async" and process_count > 1:
        return device_count // 2
    return config.rollout_devices


def meshes_from_config(config: MeshConfig, devices: Any = None,
                       rollout_devices: int | None = None) -> tuple[Mesh, Mesh]:
    """`(training mesh, rollout mesh)`: the same mesh when the rollout device count
    (`rollout_devices`, default `config.rollout_devices`) is 0; else those devices (chosen by
    `mesh.rollout_layout`) form a data-parallel rollout mesh (split by `tensor`) and the others
    the training mesh the config describes. Errors name `mesh.rollout_devices`."""
    from jaxopt_rl.config import ConfigError

    devices = list(jax.devices() if devices is None else devices)
    count = config.rollout_devices if rollout_devices is None else rollout_devices
    if count == 0:
        mesh = mesh_from_config(config, devices)
        return mesh, mesh
    if count >= len(devices):
        raise ConfigError(f"mesh.rollout_devices: {count} leaves no device of the "
                          f"{len(devices)} for the training mesh")
    if count % config.tensor:
        raise ConfigError(f"mesh.rollout_devices: {count} devices cannot be split by "
                          f"mesh.tensor={config.tensor}")
    rollout_devices_ = _rollout_devices(config, devices, count)
    taken = set(rollout_devices_)
    training_devices = [d for d in devices if d not in taken]
    try:
        train = mesh_from_config(config, training_devices)
    except ValueError as err:
        raise ConfigError(f"mesh.rollout_devices: the {len(training_devices)} training devices "
                          f"left do not fit the mesh: {err}") from None
    rollout = partitioning.make_mesh(data=-1, fsdp=1, tensor=config.tensor,
                                     devices=rollout_devices_)
    return train, rollout


def _rollout_devices(config: MeshConfig, devices: list, count: int) -> list:
    if config.rollout_layout == "processes":
        return devices[-count:]
    from jaxopt_rl.config import ConfigError

    processes = sorted({d.process_index for d in devices})
    if count % len(processes):
        raise ConfigError(f"mesh.rollout_devices: {count} devices cannot be spread evenly over "
                          f"{len(processes)} processes (mesh.rollout_layout=spread)")
    each = count // len(processes)
    out = []
    for process in processes:
        local = [d for d in devices if d.process_index == process]
        if each >= len(local):
            raise ConfigError(f"mesh.rollout_devices: {each} rollout devices per process leave "
                              f"process {process} none of its {len(local)} for training "
                              "(mesh.rollout_layout=spread)")
        out.extend(local[-each:])
    return out


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
    # dtype given: a process that holds no device of the mesh passes no block
    return jax.tree.map(
        lambda a: jax.make_array_from_callback(a.shape, sharding, lambda index: a[index],
                                               dtype=a.dtype), tree
    )
