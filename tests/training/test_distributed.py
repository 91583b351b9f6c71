"""How a process decides to join others: explicit variables, SLURM, TPU slices, or alone."""

from __future__ import annotations

import pytest

from jaxopt_rl.config import ConfigError, from_dict
from jaxopt_rl.training.distributed import DistributedConfig, initialize, plan


def test_no_cluster_variables_means_one_process():
    assert plan(DistributedConfig(), {}).how == "single"
    # a one-task SLURM job is a single process too: nothing to meet
    assert plan(DistributedConfig(), {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "1"}).how == "single"
    assert initialize(DistributedConfig(), {}).how == "single"


def test_explicit_variables_win_over_everything():
    environ = {"JAXOPT_COORDINATOR_ADDRESS": "127.0.0.1:9911", "JAXOPT_NUM_PROCESSES": "2",
               "JAXOPT_PROCESS_ID": "1", "JAXOPT_LOCAL_DEVICE_IDS": "0,1",
               "SLURM_JOB_ID": "7", "SLURM_NTASKS": "4", "TPU_WORKER_HOSTNAMES": "a,b"}
    chosen = plan(DistributedConfig(), environ)
    assert (chosen.how, chosen.coordinator_address, chosen.num_processes, chosen.process_id,
            chosen.local_device_ids) == ("explicit", "127.0.0.1:9911", 2, 1, (0, 1))


def test_config_values_win_over_the_environment():
    config = DistributedConfig(coordinator_address="10.0.0.1:1234", num_processes=3, process_id=2)
    chosen = plan(config, {"JAXOPT_NUM_PROCESSES": "9", "JAXOPT_PROCESS_ID": "0"})
    assert (chosen.num_processes, chosen.process_id) == (3, 2)


def test_slurm_and_tpu_detection():
    assert plan(DistributedConfig(), {"SLURM_JOB_ID": "7", "SLURM_NTASKS": "8"}).how == "slurm"
    assert plan(DistributedConfig(), {"SLURM_JOB_ID": "7", "SLURM_NPROCS": "2"}).how == "slurm"
    assert plan(DistributedConfig(), {"TPU_WORKER_HOSTNAMES": "t0,t1"}).how == "tpu"
    assert plan(DistributedConfig(mode="single"), {"TPU_WORKER_HOSTNAMES": "t0"}).how == "single"


@pytest.mark.parametrize("environ, message", [
    ({"JAXOPT_COORDINATOR_ADDRESS": "h:1"}, "JAXOPT_NUM_PROCESSES, JAXOPT_PROCESS_ID"),
    ({"JAXOPT_COORDINATOR_ADDRESS": "h:1", "JAXOPT_NUM_PROCESSES": "2", "JAXOPT_PROCESS_ID": "2"},
     r"must lie in \[0, 2\)"),
    ({"JAXOPT_COORDINATOR_ADDRESS": "h:1", "JAXOPT_NUM_PROCESSES": "two", "JAXOPT_PROCESS_ID": "0"},
     "JAXOPT_NUM_PROCESSES='two': expected an integer"),
])
def test_incomplete_or_bad_explicit_variables_are_named(environ, message):
    with pytest.raises(ValueError, match=message):
        plan(DistributedConfig(), environ)


def test_config_validation_names_the_key():
    with pytest.raises(ConfigError, match="process_id"):
        from_dict(DistributedConfig, {"num_processes": 2, "process_id": 5})
    with pytest.raises(ConfigError, match="mode"):
        from_dict(DistributedConfig, {"mode": "mpi"})
