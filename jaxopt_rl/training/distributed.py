"""Multi-controller start-up: `jax.distributed` initialised from the environment, or not at all.

One JAX process runs per host (TPU) or per node / per GPU (SLURM); every process runs the same
program, and `jax.devices()` then spans all of them. How a process learns its peers:

  explicit   a coordinator address, a process count and an index, from `DistributedConfig` or
             the environment (`JAXOPT_COORDINATOR_ADDRESS`, `JAXOPT_NUM_PROCESSES`,
             `JAXOPT_PROCESS_ID`, optional `JAXOPT_LOCAL_DEVICE_IDS=0,1`): localhost tests, any
             launcher that can pass three variables
  slurm      `SLURM_JOB_ID` with more than one task (`SLURM_NTASKS`/`SLURM_NPROCS`): JAX's own
             SLURM detection reads the node list, the task id and the local GPU ids
  tpu        a Cloud TPU VM slice (`TPU_WORKER_HOSTNAMES`, `TPU_ACCELERATOR_TYPE` or
             `CLOUD_TPU_TASK_ID`): JAX's own TPU detection reads the slice metadata
  single     none of the above: one process, nothing to initialise

`mode: auto` (the default) picks the first that applies, in that order. A peer that never
arrives is the classic multi-host hang; `initialization_timeout_s` bounds it and the error
names the coordinator and what this process waited for.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Literal

from jaxopt_rl.config import require

HOW = ("explicit", "slurm", "tpu", "single")
ENV_COORDINATOR = "JAXOPT_COORDINATOR_ADDRESS"
ENV_NUM_PROCESSES = "JAXOPT_NUM_PROCESSES"
ENV_PROCESS_ID = "JAXOPT_PROCESS_ID"
ENV_LOCAL_DEVICES = "JAXOPT_LOCAL_DEVICE_IDS"
TPU_MARKERS = ("TPU_WORKER_HOSTNAMES", "TPU_ACCELERATOR_TYPE", "CLOUD_TPU_TASK_ID")


@dataclasses.dataclass(frozen=True)
class DistributedConfig:
    """How this process joins the others (see the module docstring for `mode`)."""

    mode: Literal["auto", "explicit", "slurm", "tpu", "single"] = "auto"
    coordinator_address: str | None = None  # host:port of process 0 (explicit mode)
    num_processes: int | None = None
    process_id: int | None = None
    local_device_ids: tuple[int, ...] | None = None
    initialization_timeout_s: int = 300

    def __post_init__(self) -> None:
        require(self.initialization_timeout_s > 0, "initialization_timeout_s", "must be > 0")
        if self.num_processes is not None:
            require(self.num_processes >= 1, "num_processes", "must be >= 1")
        if self.process_id is not None and self.num_processes is not None:
            require(0 <= self.process_id < self.num_processes, "process_id",
                    f"must lie in [0, num_processes={self.num_processes})")


@dataclasses.dataclass(frozen=True)
class Plan:
    """What `initialize` will do: the detected method and the arguments for JAX."""

    how: str
    coordinator_address: str | None = None
    num_processes: int | None = None
    process_id: int | None = None
    local_device_ids: tuple[int, ...] | None = None


def _int_env(environ: Mapping[str, str], name: str) -> int | None:
    raw = environ.get(name)
    if raw is None or raw == "":
        return None
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"{name}={raw!r}: expected an integer") from None


def _slurm_tasks(environ: Mapping[str, str]) -> int:
    for name in ("SLURM_NTASKS", "SLURM_NPROCS"):
        value = _int_env(environ, name)
        if value is not None:
            return value
    return 1


def plan(config: DistributedConfig, environ: Mapping[str, str] | None = None) -> Plan:
    """Decide how to initialise, from the config first and the environment second (pure)."""
    environ = os.environ if environ is None else environ
    coordinator = config.coordinator_address or environ.get(ENV_COORDINATOR)
    mode = config.mode
    if mode == "auto":
        if coordinator:
            mode = "explicit"
        elif environ.get("SLURM_JOB_ID") and _slurm_tasks(environ) > 1:
            mode = "slurm"
        elif any(environ.get(marker) for marker in TPU_MARKERS):
            mode = "tpu"
        else:
            mode = "single"
    if mode != "explicit":
        return Plan(how=mode)
    num_processes = config.num_processes or _int_env(environ, ENV_NUM_PROCESSES)
    process_id = config.process_id if config.process_id is not None else _int_env(
        environ, ENV_PROCESS_ID)
    local = config.local_device_ids
    if local is None and environ.get(ENV_LOCAL_DEVICES):
        local = tuple(int(x) for x in environ[ENV_LOCAL_DEVICES].split(","))
    missing = [name for name, value in ((ENV_COORDINATOR, coordinator),
                                        (ENV_NUM_PROCESSES, num_processes),
                                        (ENV_PROCESS_ID, process_id)) if value is None]
    if missing:
        raise ValueError("explicit multi-process start needs " + ", ".join(missing)
                         + " (in distributed.* of the config or the environment)")
    if not 0 <= process_id < num_processes:
        raise ValueError(f"{ENV_PROCESS_ID}={process_id}: must lie in [0, {num_processes})")
    return Plan("explicit", coordinator, num_processes, process_id, local)


def initialize(config: DistributedConfig, environ: Mapping[str, str] | None = None) -> Plan:
    """Join the other processes (or do nothing for a single process); returns the plan used.

    Call it before anything touches a JAX device: the device list is fixed at first use."""
    chosen = plan(config, environ)
    if chosen.how == "single":
        return chosen
    import jax

    kwargs: dict = {"initialization_timeout": config.initialization_timeout_s}
    if chosen.how == "explicit":
        kwargs.update(coordinator_address=chosen.coordinator_address,
                      num_processes=chosen.num_processes, process_id=chosen.process_id)
        if chosen.local_device_ids is not None:
            kwargs["local_device_ids"] = list(chosen.local_device_ids)
    else:
        # JAX's cluster registry names; the TPU flavours (GCE, GKE) are told apart by JAX itself
        if chosen.how == "slurm":
            kwargs["cluster_detection_method"] = "slurm"
    try:
        jax.distributed.initialize(**kwargs)
    except Exception as err:  # JAX raises several types; all mean "the peers did not meet"
        where = chosen.coordinator_address or f"{chosen.how} auto-detection"
        raise RuntimeError(
            f"jax.distributed did not start ({chosen.how}, coordinator {where}, "
            f"timeout {config.initialization_timeout_s} s): {err}") from err
    return chosen
