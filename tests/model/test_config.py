"""ModelConfig: shipped YAMLs load, validation names the key, transformers round trip."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from jaxopt_rl.config import ConfigError, from_dict, load_config
from jaxopt_rl.model import ModelConfig, RopeScaling, Tokenizer, init_model
from jaxopt_rl.model.testing import tiny_test_config

ROOT = Path(__file__).resolve().parents[2]
# Published parameter counts of the papers' policies (model cards), against which the shipped
# architecture files are checked; the rest of configs/model/ uses the project's own tokenizer.
PUBLISHED_PARAMS = {"qwen25_7b": 7.61e9, "qwen25_32b": 32.76e9, "qwen3_8b": 8.19e9}
SHIPPED = sorted(p for p in (ROOT / "configs" / "model").glob("*.yaml")
                 if p.stem not in PUBLISHED_PARAMS)


@pytest.mark.parametrize("name", sorted(PUBLISHED_PARAMS))
def test_paper_architectures_have_their_published_size(name):
    config = load_config(ModelConfig, ROOT / "configs" / "model" / f"{name}.yaml")
    assert abs(config.num_params / PUBLISHED_PARAMS[name] - 1) < 0.02, config.num_params


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_shipped_model_config_loads_and_matches_the_tokenizer(path):
    config = load_config(ModelConfig, path)
    tokenizer = Tokenizer.default()
    assert config.vocab_size == tokenizer.vocab_size
    assert set(config.eos_token_ids) == set(tokenizer.eos_ids)
    assert config.pad_token_id == tokenizer.pad_id
    assert config.bos_token_id == tokenizer.bos_id


def test_tiny_config_is_a_few_million_parameters_and_counts_right():
    config = load_config(ModelConfig, ROOT / "configs" / "model" / "tiny.yaml")
    assert 1_000_000 < config.num_params < 10_000_000
    model = init_model(config.replace(num_layers=1), seed=0)
    from flax import nnx

    counted = sum(x.size for x in __import__("jax").tree.leaves(nnx.state(model, nnx.Param)))
    assert counted == config.replace(num_layers=1).num_params


@pytest.mark.parametrize(
    "data, key",
    [
        ({"num_heads": 6, "num_kv_heads": 4}, "num_kv_heads"),
        ({"hidden_size": 30, "num_heads": 4}, "head_dim"),
        ({"head_dim": 7}, "head_dim"),
        ({"family": "qwen2", "qkv_bias": False}, "qkv_bias"),
        ({"family": "qwen2", "out_bias": True}, "out_bias"),
        ({"family": "qwen3", "qkv_bias": True, "out_bias": False}, "out_bias"),
        ({"family": "qwen3", "qk_norm": False}, "qk_norm"),
        ({"family": "qwen2", "mlp_bias": True}, "mlp_bias"),
        ({"family": "qwen2", "rope_scaling": {}}, "rope_scaling"),
        (
            {"family": "llama", "rope_scaling": {"high_freq_factor": 0.5}},
            "rope_scaling.high_freq_factor",
        ),
        ({"eos_token_ids": [5000]}, "eos_token_ids"),
        ({"pad_token_id": -1}, "pad_token_id"),
        ({"param_dtype": "float16"}, "param_dtype"),
        ({"num_layer": 2}, "num_layer"),
        ({"num_layers": -1}, "num_layers"),  # errors a CLI can print as one line
        ({"rope_theta": float("inf")}, "rope_theta"),
        ({"max_position_embeddings": -5}, "max_position_embeddings"),
        ({"initializer_range": float("nan")}, "initializer_range"),
    ],
)
def test_invalid_config_names_the_key(data, key):
    with pytest.raises(ConfigError) as err:
        from_dict(ModelConfig, data)
    assert str(err.value).startswith(key), str(err.value)


def test_family_defaults_for_bias_and_norm():
    assert (ModelConfig(family="qwen2").qkv_bias, ModelConfig(family="qwen2").out_bias) == (
        True,
        False,
    )
    qwen3 = ModelConfig(family="qwen3")
    assert (qwen3.qkv_bias, qwen3.out_bias, qwen3.qk_norm) == (False, False, True)
    llama = ModelConfig(family="llama", qkv_bias=True, out_bias=True, mlp_bias=True)
    assert (llama.qk_norm, llama.mlp_bias) == (False, True)


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama"])
def test_transformers_round_trip(family):
    config = tiny_test_config(family, head_dim=32, eos_token_ids=(2, 3))
    back = ModelConfig.from_hf(config.to_hf())
    assert back == config


def test_from_hf_reads_legacy_rope_keys_and_rejects_what_it_cannot_run():
    import transformers

    # what a transformers 4.x LlamaConfig carries: rope_theta + rope_scaling, no rope_parameters
    legacy = SimpleNamespace(
        model_type="llama",
        vocab_size=128,
        hidden_size=64,
        intermediate_size=96,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        rms_norm_eps=1e-5,
        max_position_embeddings=256,
        rope_theta=500000.0,
        rope_scaling={
            "rope_type": "llama3",
            "factor": 32.0,
            "low_freq_factor": 1.0,
            "high_freq_factor": 4.0,
            "original_max_position_embeddings": 8192,
        },
    )
    config = ModelConfig.from_hf(legacy)
    assert config.rope_theta == 500000.0
    assert config.rope_scaling == RopeScaling(32.0, 1.0, 4.0, 8192)

    yarn = transformers.Qwen2Config(
        hidden_size=64,
        num_attention_heads=4,
        rope_parameters={"rope_type": "yarn", "rope_theta": 1e6, "factor": 4.0},
    )
    with pytest.raises(ConfigError, match="rope_type"):
        ModelConfig.from_hf(yarn)
    gelu = transformers.Qwen3Config(hidden_size=64, num_attention_heads=4, hidden_act="gelu")
    with pytest.raises(ConfigError, match="hidden_act"):
        ModelConfig.from_hf(gelu)
    sliding = transformers.Qwen2Config(
        hidden_size=64, num_attention_heads=4, use_sliding_window=True
    )
    with pytest.raises(ConfigError, match="use_sliding_window"):
        ModelConfig.from_hf(sliding)
    with pytest.raises(ConfigError, match="model_type"):
        ModelConfig.from_hf(transformers.GPT2Config())
