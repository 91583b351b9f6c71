"""Checkpoint folders: exact save -> load round trips (single file, sharded, bf16, onto a mesh),
interop with transformers, malformed folders failing with the file and tensor named, and a
folder that fails its manifest refused before anything is read."""

import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from safetensors.numpy import load_file, save_file

from jaxopt_rl.config import PROJECT_ROOT
from jaxopt_rl.manifest import MANIFEST_FILE
from jaxopt_rl.model import CheckpointError, init_model, load_pretrained, make_mesh, save_pretrained
from jaxopt_rl.model.checkpoint import INDEX_FILE, hf_tensor_name, read_config
from jaxopt_rl.model.testing import tiny_test_config


def flat_params(model):
    return {
        jax.tree_util.keystr(path): np.asarray(leaf.astype(jnp.float32))
        for path, leaf in jax.tree_util.tree_flatten_with_path(nnx.state(model))[0]
    }


def assert_same_params(a, b):
    flat_a, flat_b = flat_params(a), flat_params(b)
    assert flat_a.keys() == flat_b.keys()
    for key in flat_a:
        np.testing.assert_array_equal(flat_a[key], flat_b[key], err_msg=key)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """(model, folder) for an untied llama (every kind of tensor: biases, lm_head)."""
    config = tiny_test_config("llama", qkv_bias=True, out_bias=True, mlp_bias=True)
    model = init_model(config, seed=7)
    folder = save_pretrained(model, tmp_path_factory.mktemp("llama") / "ckpt")
    return model, folder


@pytest.fixture
def broken(saved, tmp_path):
    """A private copy of the saved folder for a test to damage, without a manifest (as a third
    party's folder): what is left to find the damage is the loader's own checks."""
    folder = shutil.copytree(saved[1], tmp_path / "ckpt")
    (folder / MANIFEST_FILE).unlink()
    return folder


def test_hf_tensor_names():
    assert hf_tensor_name("layers/3/self_attn/q_proj/kernel") == (
        "model.layers.3.self_attn.q_proj.weight",
        True,
    )
    assert hf_tensor_name("layers/0/self_attn/k_proj/bias") == (
        "model.layers.0.self_attn.k_proj.bias",
        False,
    )
    assert hf_tensor_name("embed_tokens/embedding") == ("model.embed_tokens.weight", False)
    assert hf_tensor_name("layers/1/self_attn/q_norm/scale") == (
        "model.layers.1.self_attn.q_norm.weight",
        False,
    )
    assert hf_tensor_name("norm/scale") == ("model.norm.weight", False)
    assert hf_tensor_name("lm_head/kernel") == ("lm_head.weight", True)


@pytest.mark.parametrize("family", ["qwen2", "qwen3", "llama"])
def test_save_load_round_trip_is_exact(family, tmp_path):
    model = init_model(tiny_test_config(family), seed=3)
    folder = save_pretrained(model, tmp_path / family)
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", MANIFEST_FILE, "model.safetensors"]
    loaded = load_pretrained(folder)
    assert loaded.config == model.config
    assert_same_params(loaded, model)


def test_sharded_save_writes_an_index_and_loads_onto_a_mesh(saved, tmp_path):
    model, _ = saved
    folder = save_pretrained(model, tmp_path / "sharded", max_shard_size=40_000)
    shards = sorted(p.name for p in folder.glob("model-*.safetensors"))
    assert len(shards) > 2 and shards[0] == f"model-00001-of-{len(shards):05d}.safetensors"
    index = json.loads((folder / INDEX_FILE).read_text())
    assert set(index["weight_map"].values()) == set(shards)
    assert index["metadata"]["total_size"] == sum(x.nbytes for x in flat_params(model).values())

    mesh = make_mesh(data=2, fsdp=2, tensor=2)
    loaded = load_pretrained(folder, mesh=mesh)
    assert_same_params(loaded, model)
    up = loaded.layers[1].mlp.up_proj.kernel[...]
    assert up.sharding.spec == jax.sharding.PartitionSpec("fsdp", "tensor")
    assert loaded.lm_head.kernel[...].sharding.spec == jax.sharding.PartitionSpec("fsdp", "tensor")

    # saving again with one file removes the stale shards and index
    save_pretrained(model, folder)
    assert sorted(p.name for p in folder.iterdir()) == [
        "config.json", MANIFEST_FILE, "model.safetensors"]


def test_bfloat16_round_trip_and_dtype_conversion(saved, tmp_path):
    model, folder = saved
    as_bf16 = load_pretrained(folder, dtype="bfloat16")
    kernel = as_bf16.layers[0].self_attn.q_proj.kernel[...]
    assert kernel.dtype == jnp.bfloat16 and as_bf16.config.compute_dtype == "bfloat16"
    np.testing.assert_array_equal(
        np.asarray(kernel),
        np.asarray(model.layers[0].self_attn.q_proj.kernel[...].astype(jnp.bfloat16)),
    )
    folder16 = save_pretrained(as_bf16, tmp_path / "bf16")
    header = json.loads((folder16 / "config.json").read_text())
    assert header["dtype"] == "bfloat16"
    assert_same_params(load_pretrained(folder16, dtype="bfloat16"), as_bf16)


@pytest.mark.torch
def test_transformers_reads_what_we_save(saved):
    torch = pytest.importorskip("torch", reason="PyTorch reads the exported folder in this check")
    import transformers

    model, folder = saved
    hf_model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    ids = np.random.default_rng(0).integers(0, 128, size=(2, 12))
    with torch.no_grad():
        expected = hf_model(torch.from_numpy(ids)).logits.numpy()
    graphdef, state = nnx.split(model)
    got = jax.jit(lambda s, i: nnx.merge(graphdef, s)(i))(state, jnp.asarray(ids))
    np.testing.assert_allclose(np.asarray(got), expected, atol=1e-4)


def test_harmless_extra_tensors_are_ignored(tmp_path):
    model = init_model(tiny_test_config("qwen2"), seed=2)  # tied embeddings
    folder = save_pretrained(model, tmp_path / "tied")
    (folder / MANIFEST_FILE).unlink()  # another exporter's folder: no manifest
    tensors = load_file(folder / "model.safetensors")
    tensors["lm_head.weight"] = tensors["model.embed_tokens.weight"]
    tensors["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(8, np.float32)
    save_file(tensors, folder / "model.safetensors", metadata={"format": "pt"})
    assert_same_params(load_pretrained(folder), model)


# ------------------------------------------------------------------------------ malformed


def test_missing_shard_names_the_shard_and_a_tensor(saved, tmp_path):
    folder = save_pretrained(saved[0], tmp_path / "sharded", max_shard_size=40_000)
    (folder / MANIFEST_FILE).unlink()  # the index's own check, as in a third party's folder
    victim = sorted(folder.glob("model-*.safetensors"))[1]
    held = sorted(
        k
        for k, v in json.loads((folder / INDEX_FILE).read_text())["weight_map"].items()
        if v == victim.name
    )
    victim.unlink()
    with pytest.raises(CheckpointError) as err:
        load_pretrained(folder)
    assert (
        INDEX_FILE in str(err.value) and victim.name in str(err.value) and held[0] in str(err.value)
    )


def test_unknown_architecture_names_config_json(broken):
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(
        json.dumps({**config, "model_type": "gpt2", "architectures": ["GPT2LMHeadModel"]})
    )
    with pytest.raises(CheckpointError, match=r"config\.json.*(gpt2|GPT2LMHeadModel)"):
        load_pretrained(broken)
    (broken / "config.json").write_text(json.dumps({**config, "model_type": "no-such-model"}))
    with pytest.raises(CheckpointError, match=r"config\.json"):
        load_pretrained(broken)


SHIPPED_CONFIG = PROJECT_ROOT / "jaxopt_rl/demo/assets/sft_tiny/config.json"


@pytest.mark.parametrize(("change", "problem"), [
    ({"num_hidden_layers": -2}, "num_hidden_layers"),  # huggingface_hub's validator refuses it
    ({"rms_norm_eps": "abc"}, "rms_norm_eps"),
    ({"vocab_size": None}, "vocab_size"),
])
def test_an_invalid_config_json_is_a_checkpoint_error_naming_file_and_key(tmp_path, change,
                                                                          problem):
    config = json.loads(SHIPPED_CONFIG.read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, **change}))
    with pytest.raises(CheckpointError) as err:
        read_config(tmp_path)
    message = str(err.value)
    assert "\n" not in message
    assert message.startswith(f"{tmp_path / 'config.json'}: ") and problem in message


def test_shape_mismatch_names_file_and_tensor(broken):
    config = json.loads((broken / "config.json").read_text())
    (broken / "config.json").write_text(json.dumps({**config, "intermediate_size": 80}))
    with pytest.raises(CheckpointError) as err:
        load_pretrained(broken)
    message = str(err.value)
    assert (
        "model.safetensors" in message and "mlp" in message and "80" in message and "96" in message
    )


def test_missing_and_unexpected_tensors_are_named(broken):
    tensors = load_file(broken / "model.safetensors")
    del tensors["model.layers.1.mlp.down_proj.weight"]
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        CheckpointError, match=r"model\.layers\.1\.mlp\.down_proj\.weight is missing"
    ):
        load_pretrained(broken)
    tensors["model.layers.1.mlp.down_proj.weight"] = np.zeros((64, 96), np.float32)
    tensors["model.layers.0.self_attn.mystery.weight"] = np.zeros(3, np.float32)
    save_file(tensors, broken / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(
        CheckpointError,
        match=r"model\.safetensors: unexpected tensor model\.layers\.0\.self_attn\.mystery",
    ):
        load_pretrained(broken)


def test_unreadable_or_absent_files_are_named(broken):
    (broken / "model.safetensors").write_bytes(b"not a safetensors file")
    with pytest.raises(CheckpointError, match=r"model\.safetensors: cannot open"):
        load_pretrained(broken)
    (broken / "model.safetensors").unlink()
    with pytest.raises(CheckpointError, match=r"no model\.safetensors"):
        load_pretrained(broken)
    (broken / "config.json").unlink()
    with pytest.raises(CheckpointError, match=r"config\.json: not found"):
        load_pretrained(broken)


# ------------------------------------------------------------------------------ manifest


def test_a_saved_folder_carries_a_manifest_of_the_files_it_wrote(saved, tmp_path):
    import hashlib

    folder = save_pretrained(saved[0], tmp_path / "sharded", max_shard_size=40_000)
    files = json.loads((folder / MANIFEST_FILE).read_text())["files"]
    written = sorted(p.name for p in folder.iterdir() if p.name != MANIFEST_FILE)
    assert sorted(files) == written and INDEX_FILE in written
    for name, entry in files.items():
        data = (folder / name).read_bytes()
        assert entry == {"bytes": len(data), "sha256": hashlib.sha256(data).hexdigest()}


@pytest.mark.parametrize("damage", ["flip", "truncate", "delete", "random"])
def test_a_folder_that_fails_its_manifest_is_refused_naming_the_file(saved, tmp_path, damage):
    folder = shutil.copytree(saved[1], tmp_path / "ckpt")
    weights = folder / "model.safetensors"
    data = bytearray(weights.read_bytes())
    if damage == "flip":  # the header still parses: only the digest can tell
        middle = len(data) // 2
        data[middle:middle + 64] = bytes(b ^ 0xFF for b in data[middle:middle + 64])
        weights.write_bytes(bytes(data))
    elif damage == "truncate":
        weights.write_bytes(bytes(data[:-100]))
    elif damage == "delete":
        weights.unlink()
    else:
        rng = np.random.default_rng(0)
        for file in folder.iterdir():
            file.write_bytes(rng.integers(0, 256, file.stat().st_size, np.uint8).tobytes())
    with pytest.raises(CheckpointError) as err:
        load_pretrained(folder)
    message = str(err.value)
    assert "\n" not in message and f"{folder} failed verification" in message
    bad = MANIFEST_FILE if damage == "random" else "model.safetensors"
    assert f": {bad} " in message
