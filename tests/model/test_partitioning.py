"""Partition rules: every parameter of every family has a rule, specs are what the rules say,
indivisible dimensions fall back to replication (and are reported), bad input is named."""

import jax
import pytest
from flax import nnx
from jax.sharding import PartitionSpec as P

from jaxopt_rl.model import DEFAULT_RULES, SAMPLING_RULES, ShardingRules, Transformer, make_mesh
from jaxopt_rl.model.partitioning import (
    batch_shard_count,
    explain_fallbacks,
    logical_axes,
    param_path,
    param_shardings,
)
from jaxopt_rl.model.testing import tiny_test_config


def abstract_state(config):
    return nnx.split(nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0))))[1]


def specs(state, mesh, rules=DEFAULT_RULES):
    shardings = param_shardings(state, mesh, rules)
    return {
        param_path(path): s.spec for path, s in jax.tree_util.tree_flatten_with_path(shardings)[0]
    }


@pytest.fixture(scope="module")
def mesh():
    return make_mesh(data=2, fsdp=2, tensor=2)


@pytest.mark.parametrize(
    "config",
    [
        tiny_test_config("qwen2", tie_word_embeddings=False),
        tiny_test_config("qwen3", qkv_bias=True, out_bias=True),
        tiny_test_config("llama", qkv_bias=True, out_bias=True, mlp_bias=True),
    ],
    ids=["qwen2", "qwen3-bias", "llama-bias"],
)
def test_every_parameter_gets_the_intended_spec(config, mesh):
    got = specs(abstract_state(config), mesh)
    assert got["embed_tokens/embedding"] == P("tensor", "fsdp")
    assert got["layers/0/self_attn/q_proj/kernel"] == P("fsdp", "tensor")
    assert got["layers/1/self_attn/k_proj/kernel"] == P("fsdp", "tensor")
    assert got["layers/0/self_attn/o_proj/kernel"] == P("tensor", "fsdp")
    assert got["layers/0/mlp/gate_proj/kernel"] == P("fsdp", "tensor")
    assert got["layers/0/mlp/down_proj/kernel"] == P("tensor", "fsdp")
    assert got["layers/0/input_layernorm/scale"] == P(None)
    assert got["norm/scale"] == P(None)
    if config.qkv_bias:
        assert got["layers/0/self_attn/q_proj/bias"] == P("tensor")
    if config.qk_norm:
        assert got["layers/0/self_attn/k_norm/scale"] == P(None)
    if config.mlp_bias:
        assert got["layers/0/mlp/up_proj/bias"] == P("tensor") and got[
            "layers/0/mlp/down_proj/bias"
        ] == P(None)
    if not config.tie_word_embeddings:
        assert got["lm_head/kernel"] == P("fsdp", "tensor")


def test_sampling_rules_keep_parameters_whole_across_fsdp(mesh):
    got = specs(abstract_state(tiny_test_config("qwen2")), mesh, SAMPLING_RULES)
    assert got["layers/0/self_attn/q_proj/kernel"] == P(None, "tensor")
    assert got["embed_tokens/embedding"] == P("tensor", None)


def test_indivisible_dimensions_are_replicated_and_reported(mesh):
    state = abstract_state(tiny_test_config("qwen2", vocab_size=127))
    assert specs(state, mesh)["embed_tokens/embedding"] == P(None, "fsdp")
    assert explain_fallbacks(state, mesh) == [
        "embed_tokens/embedding dim 0 (127) not divisible by ('tensor',)"
    ]


def test_unknown_parameter_and_bad_rules_are_named(mesh):
    with pytest.raises(KeyError, match="layers/0/adapter/kernel"):
        logical_axes("layers/0/adapter/kernel")
    with pytest.raises(ValueError, match=r"ShardingRules\.mlp.*'model'"):
        ShardingRules(mlp=("model",))


def test_make_mesh_sizes():
    assert dict(make_mesh(data=-1, tensor=2).shape) == {"data": 4, "fsdp": 1, "tensor": 2}
    assert batch_shard_count(make_mesh(data=2, fsdp=2, tensor=2)) == 4
    assert batch_shard_count(None) == 1
    with pytest.raises(ValueError, match="needs 12 devices, have 8"):
        make_mesh(data=3, fsdp=2, tensor=2)
    with pytest.raises(ValueError, match="cannot be split"):
        make_mesh(data=-1, tensor=3)
