"""`jaxopt-rl plan` on a small TPU topology (compile-only, libtpu on this CPU): the small model's
train step and sampler compile, the memory arithmetic holds against an independent count of
what the step's arguments are, a plan that cannot fit exits 1 naming its largest buffers, and a
bad slice name is refused with a message that names it."""

from __future__ import annotations

import dataclasses
import json

import pytest

from jaxopt_rl import cli
from jaxopt_rl.config import from_dict, load_yaml
from jaxopt_rl.model.config import ModelConfig
from jaxopt_rl.planning.hardware import parse_slice
from jaxopt_rl.planning.plan import plan_run
from jaxopt_rl.training.config import load_train_config
from tests.planning.conftest import requires_libtpu

pytestmark = [requires_libtpu, pytest.mark.slow]

SMALL_RUN = ["grpo.rows=4", "grpo.microbatches=1", "grpo.horizon=512",
             "rollout.max_new_tokens=64", "rollout.group_size=4", "rollout.prompts_per_call=2",
             "target.prompt_tokens=128", "mesh.fsdp=-1"]


@pytest.fixture(scope="module")
def small_plan():
    config = load_train_config("configs/train/tiny_qp_p30.yaml", SMALL_RUN)
    small = from_dict(ModelConfig, load_yaml("configs/model/small.yaml"))
    config = dataclasses.replace(config, model=small)
    return config, plan_run(config, parse_slice("v5e-4"), log=lambda _: None)


def test_small_model_compiles_for_a_v5e_slice_and_fits(small_plan):
    _, plan = small_plan
    assert plan["chips"] == 4 and plan["libtpu_topology"] == "v5e:2x2"
    assert plan["fits"] and plan["train"]["fits"] and plan["sampler"]["fits"]
    assert plan["train"]["compile_s"] > 0 and plan["sampler"]["compile_s"] > 0
    for key in ("model_flops", "tokens", "projected_mfu"):
        assert key in plan["train"]
    assert plan["train"]["replicated_dims"] == []  # the small model's dimensions all divide
    for key in ("decode_roofline_s", "tokens_per_s_per_chip"):
        assert key in plan["sampler"]
    json.dumps(plan)  # the JSON the command writes


def test_train_arguments_are_the_state_and_batch_over_their_shards(small_plan):
    """Parameters, two Adam moments (float32) and the batch, split over the 4 chips; the small
    leaves that cannot split (norm scales, biases, counters) stay whole: within 5 %."""
    config, plan = small_plan
    params = config.model.num_params
    batch = 6 * 4 * config.grpo.rows * config.grpo.horizon  # six [U, R, L] 4-byte arrays
    want = (3 * 4 * params + batch) / 4
    got = plan["train"]["argument_bytes"]
    assert abs(got - want) <= 0.05 * want, (got, want)
    # the state is donated: what comes back aliases what went in
    assert plan["train"]["alias_bytes"] >= 0.95 * 3 * 4 * params / 4


@pytest.mark.parametrize("part", ["train", "sampler"])
def test_peak_and_headroom_are_consistent(small_plan, part):
    _, plan = small_plan
    figures = plan[part]
    peak = (figures["argument_bytes"] + figures["temp_bytes"] + figures["output_bytes"]
            - figures["alias_bytes"])
    assert figures["peak_bytes"] == peak
    assert figures["headroom"] == pytest.approx(1 - peak / plan["hbm_per_chip_bytes"])
    assert figures["fits"] == (figures["headroom"] >= 0.10)


def test_a_plan_that_cannot_fit_exits_1_and_names_its_largest_buffers(tmp_path, capsys):
    """The tiny model with dense attention and no remat over 16k-token rows on one v5e chip:
    the float32 [L, L] scores of its heads are far beyond 16 GiB."""
    out = tmp_path / "plan.json"
    code = cli.main(["plan", "--config", "configs/train/tiny_qp_p30.yaml", "--topology", "v5e-1",
                     "--json", str(out), "grpo.rows=1", "grpo.microbatches=1",
                     "grpo.horizon=16384", "model.attention=dense", "model.remat=none",
                     "model.logprob_chunk=0", "rollout.max_new_tokens=16",
                     "rollout.prompts_per_call=1", "rollout.group_size=2",
                     "target.prompt_tokens=32"])
    printed = capsys.readouterr().out
    assert code == 1
    assert "DOES NOT FIT" in printed and "largest buffers:" in printed
    plan = json.loads(out.read_text())
    assert not plan["fits"] and not plan["train"]["fits"]
    assert plan["train"]["temp_bytes"] > plan["hbm_per_chip_bytes"]
    # the compiler refuses it; the largest array of the program is an [.., L, L] score array
    assert "exceeds available HBM" in plan["train"]["compiler_refused"]
    assert "16384,16384" in plan["train"]["largest_buffers"][0]


def test_a_bad_slice_name_is_refused_with_a_message(capsys):
    code = cli.main(["plan", "--config", "configs/train/tiny_qp_p30.yaml",
                     "--topology", "v5p-30"])
    err = capsys.readouterr().err
    assert code == 2
    assert "target.topology" in err and "'v5p-30'" in err and "counts TensorCores" in err


def test_a_rollout_mesh_of_its_own_is_planned_on_its_own_chips():
    """`mesh.rollout_devices=2` on a v5e-4: the train step on 2 chips (fsdp 2), the sampler on
    the other 2 (data 2), and the weight copy between them is the parameters' bytes."""
    config = load_train_config("configs/train/tiny_qp_p30.yaml",
                               [*SMALL_RUN, "mesh.rollout_devices=2"])
    split = plan_run(config, parse_slice("v5e-4"), log=lambda _: None)
    assert split["mesh"] == {"data": 1, "fsdp": 2, "tensor": 1}
    assert split["rollout_mesh"] == {"data": 2, "fsdp": 1, "tensor": 1}
    assert split["weight_transfer_bytes"] == config.model.num_params * 4  # float32 parameters
    assert split["fits"]
    whole = plan_run(load_train_config("configs/train/tiny_qp_p30.yaml", SMALL_RUN),
                     parse_slice("v5e-4"), log=lambda _: None)
    assert whole["rollout_mesh"] is None and whole["weight_transfer_bytes"] == 0
    # fsdp over half the chips: each training chip holds twice the sharded state
    assert split["train"]["argument_bytes"] > whole["train"]["argument_bytes"]
    from jaxopt_rl.commands.plan import render

    assert "rollout mesh {'data': 2" in render(dict(split, config="tiny"))
    fallback = "embed_tokens/embedding dim 0 (127) not divisible by ('tensor',)"
    train = dict(split["train"], replicated_dims=[fallback])
    assert f"replicated (mesh axes do not divide them): {fallback}" in render(
        dict(split, config="tiny", train=train))
