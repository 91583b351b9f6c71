"""Traced numeric knobs (`EnvNumbers`): `environment_step` vmapped over the numbers of several
environments of one structure gives, bit for bit, what `rewards_and_signals` compiles for
each environment alone (the online path, numbers as constants)."""

import dataclasses

import jax
import numpy as np
import pytest

from jaxopt_rl.data.examples import EXAMPLE_RECORDS
from jaxopt_rl.data.execution_records import load_record_batch
from jaxopt_rl.rewards import prepare_references, rewards_and_signals
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rewards.env_numbers import stack, structure
from jaxopt_rl.rewards.environment import environment_step

# (environment, the overrides of each member of its family)
FAMILIES = {
    "abs_2s": ["filter.threshold_s={}", "limit.limit_s={}", "gates.timeout_tolerance={}"],
    "len_1e5": ["filter.max_chars={}"],
    "rel_filter_p10": ["filter.drop_percent={}"],
    "rel_timeout_p50": ["limit.percentile={}", "gates.timeout_tolerance={}"],
    "rw_p80": ["limit.percentile={}", "gates.timeout_tolerance={}"],
    "mc_tloc": ["correctness_limit_s={}"],
    "multitask": ["composition.multitask_share={}"],
    "qp_p30": ["gates.quality_threshold={}"],
}
VALUES = {
    "abs_2s": [(0.3, 0.05, 0.0), (10.0, 0.01, 0.5)],
    "len_1e5": [(3000,), (100000,)],
    "rel_filter_p10": [(33.0,), (90.0,)],
    "rel_timeout_p50": [(29.0, 0.0), (57.0, 0.5)],
    "rw_p80": [(45.0, 0.0), (80.0, 0.3)],
    "mc_tloc": [(0.05,), (0.001,)],
    "multitask": [(0.37,), (1.0,)],
    "qp_p30": [(0.3,), (0.71,)],
}


@pytest.fixture(scope="module")
def batch():
    return load_record_batch(EXAMPLE_RECORDS)[0]


@pytest.mark.parametrize("name", FAMILIES)
def test_vmapped_numbers_equal_static_envs(batch, name):
    envs = [load_env_config(name, [key.format(v) for key, v in zip(FAMILIES[name], values)])
            for values in VALUES[name]]
    shape = structure(envs[0])
    assert all(structure(e) == shape for e in envs)
    table = prepare_references(batch.ref_duration_PTH, batch.ref_mask_PTH, shape)
    step = jax.jit(jax.vmap(lambda n: environment_step(batch, shape, table, n)))
    reward_CB, signals_C = step(stack(envs))
    for c, env in enumerate(envs):
        want_reward, want = rewards_and_signals(batch, env)
        np.testing.assert_array_equal(np.asarray(reward_CB[c]), np.asarray(want_reward))
        for field in dataclasses.fields(want):
            np.testing.assert_array_equal(np.asarray(getattr(signals_C, field.name)[c]),
                                          np.asarray(getattr(want, field.name)),
                                          err_msg=f"{env.name}: {field.name}")


def test_structure_keeps_kinds_and_stack_refuses_mixed():
    a, b = load_env_config("abs_2s"), load_env_config("abs_2s", ["limit.limit_s=3"])
    assert structure(a) == structure(b) and a != b
    c = load_env_config("abs_2s", ["filter.aggregate=median"])
    assert structure(c) != structure(a)
    with pytest.raises(ValueError, match="group them by structure"):
        stack([a, c])
