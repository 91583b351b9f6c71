"""The weight copy from the training mesh to the rollout mesh, device to device, never through
host memory: the one place that knows how.

    one process    `jax.device_put(params, rollout_shardings)`: XLA's resharding transfer
    processes      multi-controller JAX refuses a `device_put` between two different device sets
                   held by several processes (jax 0.10.2: "input and target sharding should have
                   the same set of devices"), so the copy is one compiled program over the union
                   of both meshes: the rollout devices are laid out like the training mesh (a
                   "stage" mesh of the same shape), each leaf is viewed as `[2, ...]` on a union
                   mesh `(role, *training axes)` (role 0: the trainer's shards, role 1: the
                   samplers' previous copy, shard for shard), and the program writes role 0 over
                   role 1. The stage copy then reshards onto the sampler's own shardings inside
                   the rollout devices (a second compiled program: across processes
                   `device_put` takes a path through the host).

Every process that holds a device of either mesh must call `transfer` at the same point of
its schedule (it is a collective); the cross-process form needs as many rollout devices as
training devices (the paper's 50/50 split; `training.setup` refuses other splits, naming
`mesh.rollout_devices`).
"""

from __future__ import annotations

from functools import partial
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

ROLE = "role"


def sampler_dtype(leaf: Any, dtype: Any) -> Any:
    """The dtype of `leaf` in the samplers' copy (`rollout.weight_dtype: compute`): floating
    matrices in `dtype` (the model casts them to its compute dtype at use anyway); vectors and
    scalars as they are (a norm's scale may be applied in float32)."""
    floating = jnp.issubdtype(leaf.dtype, jnp.floating)
    return jnp.dtype(dtype) if floating and len(leaf.shape) >= 2 else leaf.dtype


@partial(jax.jit, static_argnames="dtype")
def sampler_weights(params: Any, dtype: Any = None) -> Any:
    """The samplers' copy of `params`, on the same devices: fresh buffers (the train step
    donates its own), matrices in `dtype` when given (`sampler_dtype`)."""
    def fresh(leaf):
        # `copy`, never a same-dtype `astype`: jit may forward an unchanged input as its
        # output (it does not in jax 0.10.2 on CPU), and that buffer is the one the next
        # train step donates
        target = leaf.dtype if dtype is None else sampler_dtype(leaf, dtype)
        return leaf.copy() if target == leaf.dtype else leaf.astype(target)

    return jax.tree.map(fresh, params)


def spans_processes(*meshes: Mesh) -> bool:
    """True when some device of these meshes belongs to another process."""
    return any(device.process_index != jax.process_index()
               for mesh in meshes for device in mesh.devices.flat)


class WeightTransfer:
    """`transfer(params)`: the training mesh's parameters as a copy on the rollout shardings."""

    def __init__(self, train_mesh: Mesh, rollout_mesh: Mesh, rollout_shardings: Any):
        self.rollout_shardings = rollout_shardings
        self.cross_process = spans_processes(train_mesh, rollout_mesh)
        if not self.cross_process:
            return
        if train_mesh.devices.size != rollout_mesh.devices.size:
            raise ValueError(f"a weight copy across processes needs as many rollout devices as "
                             f"training devices; got {rollout_mesh.devices.size} and "
                             f"{train_mesh.devices.size}")
        stage_devices = np.array(list(rollout_mesh.devices.flat)).reshape(train_mesh.devices.shape)
        self.stage_mesh = Mesh(stage_devices, train_mesh.axis_names)
        self.union_mesh = Mesh(np.stack([train_mesh.devices, stage_devices]),
                               (ROLE, *train_mesh.axis_names))
        self._copy = self._reshard = None
        self._stage_copy = None  # the samplers' previous copy, on the stage mesh

    def __call__(self, params: Any) -> Any:
        if not self.cross_process:
            return jax.device_put(params, self.rollout_shardings)
        if self._stage_copy is None:  # first call: role 1 starts as zeros of the stage layout
            self._stage_copy = jax.tree.map(self._zeros_on_stage, params)
        stacked = jax.tree.map(self._stack, params, self._stage_copy)
        if self._copy is None:
            shardings = jax.tree.map(lambda leaf: leaf.sharding, stacked)
            self._copy = jax.jit(_overwrite_role_one, out_shardings=shardings,
                                 donate_argnums=0)
        copied = self._copy(stacked)
        self._stage_copy = jax.tree.map(self._unstack, copied, params)
        if self._reshard is None:  # compiled: `device_put` takes a host path across processes
            self._reshard = jax.jit(lambda tree: tree, out_shardings=self.rollout_shardings)
        return self._reshard(self._stage_copy)

    # ---- the union view of one leaf ------------------------------------------------------------
    def _stage_sharding(self, leaf: jax.Array) -> NamedSharding:
        return NamedSharding(self.stage_mesh, leaf.sharding.spec)

    def _union_sharding(self, leaf: jax.Array) -> NamedSharding:
        return NamedSharding(self.union_mesh, PartitionSpec(ROLE, *leaf.sharding.spec))

    def _zeros_on_stage(self, leaf: jax.Array) -> jax.Array:
        sharding = self._stage_sharding(leaf)
        return jax.make_array_from_callback(
            leaf.shape, sharding,
            lambda index: np.zeros(_block_shape(leaf.shape, index), leaf.dtype),
            dtype=leaf.dtype)

    def _stack(self, train_leaf: jax.Array, stage_leaf: jax.Array) -> jax.Array:
        """`[2, ...]` on the union mesh from the two arrays' own shards (no copy of data)."""
        union = self._union_sharding(train_leaf)
        local = {s.device: s.data for s in train_leaf.addressable_shards}
        local.update({s.device: s.data for s in stage_leaf.addressable_shards})
        shape = (2, *train_leaf.shape)
        blocks = [local[device][None] for device in union.addressable_devices_indices_map(shape)]
        return jax.make_array_from_single_device_arrays(shape, union, blocks,
                                                        dtype=train_leaf.dtype)

    def _unstack(self, union_leaf: jax.Array, train_leaf: jax.Array) -> jax.Array:
        """Role 1 of a union leaf: the new copy on the stage mesh."""
        sharding = self._stage_sharding(train_leaf)
        stage = set(self.stage_mesh.devices.flat)
        blocks = [s.data[0] for s in union_leaf.addressable_shards if s.device in stage]
        return jax.make_array_from_single_device_arrays(train_leaf.shape, sharding, blocks,
                                                        dtype=train_leaf.dtype)


def _overwrite_role_one(stacked: Any) -> Any:
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf[:1], leaf.shape), stacked)


def _block_shape(shape: tuple[int, ...], index: tuple[slice, ...]) -> tuple[int, ...]:
    return tuple(len(range(*s.indices(n))) for s, n in zip(index, shape))
