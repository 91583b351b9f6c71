"""Hugging Face checkpoint folders <-> `Transformer`, without PyTorch.

A folder holds ``config.json`` (read through `transformers.AutoConfig`, local files only) and
either ``model.safetensors`` or shards listed in ``model.safetensors.index.json``. Tensors are
read with `safetensors` in NumPy mode (bfloat16 through `ml_dtypes`) one at a time, cast to the
requested dtype, and placed straight into their final sharding: with a mesh each device's block
is read from the memory-mapped file by `jax.make_array_from_callback`, so the model is never
materialised whole on the host.

Names: our parameter ``layers/3/self_attn/q_proj/kernel`` is Hugging Face's
``model.layers.3.self_attn.q_proj.weight`` transposed (`torch.nn.Linear` stores ``[out, in]``);
embeddings and norm scales are stored as-is under ``.weight``; ``lm_head`` has no ``model.``
prefix. Every problem (missing shard, missing or unexpected tensor, wrong shape, unsupported
architecture) raises `CheckpointError` naming the file and the tensor.

Integrity: `save_pretrained` seals the files it wrote with a manifest of their digests
(`jaxopt_rl.manifest`) and `load_pretrained` checks a folder that has one before reading it; a
folder without one (a third party's) is read as it is.

Choices: a tied model's ``lm_head.weight`` and ``rotary_emb.inv_freq`` buffers found in a
checkpoint are ignored (some exporters write them); any other unknown tensor is an error, since
it means the architecture is not what ``config.json`` says. `save_pretrained` writes one
``model.safetensors`` up to `max_shard_size` bytes and ``model-0000i-of-0000n.safetensors`` plus
an index above it, and writes the legacy ``rope_theta``/``rope_scaling`` keys beside
``rope_parameters`` so older readers (transformers 4.x, vLLM) understand ``config.json``.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path
from typing import Any

import jax
import ml_dtypes  # noqa: F401  (registers bfloat16 with NumPy before safetensors needs it)
import numpy as np
from flax import nnx
from jax.sharding import Mesh
from safetensors import safe_open
from safetensors.numpy import save_file
from tqdm import tqdm

from jaxopt_rl.config import ConfigError
from jaxopt_rl.manifest import CheckpointError, verify_manifest, write_manifest
from jaxopt_rl.model import partitioning
from jaxopt_rl.model.config import HF_ARCHITECTURES, ModelConfig
from jaxopt_rl.model.transformer import Transformer

CONFIG_FILE = "config.json"
SINGLE_FILE = "model.safetensors"
INDEX_FILE = "model.safetensors.index.json"
_IGNORED_ALWAYS = re.compile(r"(^|\.)rotary_emb\.inv_freq$")
_SHARD_FILE = re.compile(r"^model-\d{5}-of-\d{5}\.safetensors$")


def hf_tensor_name(path: str) -> tuple[str, bool]:
    """(Hugging Face tensor name, whether it is stored transposed) for our parameter `path`."""
    *modules, leaf = path.split("/")
    prefix = ".".join(modules) if modules[0] == "lm_head" else "model." + ".".join(modules)
    if leaf == "bias":
        return f"{prefix}.bias", False
    if leaf in ("kernel", "embedding", "scale"):
        return f"{prefix}.weight", leaf == "kernel"
    raise CheckpointError(f"parameter {path!r} has no Hugging Face name")


def read_config(folder: str | Path, **overrides: Any) -> ModelConfig:
    """`ModelConfig` from ``folder/config.json`` through `transformers.AutoConfig` (offline)."""
    folder = Path(folder)
    config_path = folder / CONFIG_FILE
    if not config_path.is_file():
        raise CheckpointError(
            f"{config_path}: not found (is {folder} a Hugging Face checkpoint folder?)"
        )
    import transformers

    # Any failure here is the file's: transformers and huggingface_hub raise their own types
    # (a value their strict dataclass validators refuse: StrictDataclassClassValidationError).
    try:
        hf_config = transformers.AutoConfig.from_pretrained(str(folder), local_files_only=True)
    except Exception as err:
        raise CheckpointError(f"{config_path}: transformers cannot read it: {_one_line(err)}"
                              ) from None
    architectures = getattr(hf_config, "architectures", None) or []
    supported = set(HF_ARCHITECTURES.values())
    if architectures and not set(architectures) & supported:
        raise CheckpointError(
            f"{config_path}: architectures {architectures} are not supported; "
            f"supported: {sorted(supported)}"
        )
    try:
        return ModelConfig.from_hf(hf_config, **overrides)
    except (ConfigError, ValueError, TypeError) as err:  # e.g. float("x") for rms_norm_eps
        raise CheckpointError(f"{config_path}: {_one_line(err)}") from None


def _one_line(err: Exception) -> str:
    """`err`'s message on one line (huggingface_hub's validation errors span several)."""
    return " ".join(str(err).split())


def load_pretrained(
    path: str | Path,
    dtype: str = "float32",
    mesh: Mesh | None = None,
    *,
    compute_dtype: str | None = None,
    rules: partitioning.ShardingRules = partitioning.DEFAULT_RULES,
) -> Transformer:
    """Load a Hugging Face checkpoint folder into a `Transformer`.

    `dtype` is the parameter dtype ("float32" or "bfloat16"), `compute_dtype` the activation
    dtype (default: `dtype`). With `mesh`, parameters are placed per `rules`.
    """
    folder = Path(path)
    verify_manifest(folder)  # before anything is decoded: a damaged file is named as such
    config = read_config(folder, param_dtype=dtype, compute_dtype=compute_dtype or dtype)
    abstract = nnx.eval_shape(lambda: Transformer(config, rngs=nnx.Rngs(0)))
    graphdef, abstract_state = nnx.split(abstract)
    tensor_files = _tensor_files(folder)
    expected = {}
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(abstract_state)[0]:
        name, transposed = hf_tensor_name(partitioning.param_path(keypath))
        expected[name] = (tuple(leaf.shape), transposed)
    _check_names(folder, config, expected, tensor_files)
    sharding_by_path: dict[str, Any] = {}
    if mesh is not None:
        shardings = partitioning.param_shardings(abstract_state, mesh, rules)
        for keypath, sharding in jax.tree_util.tree_flatten_with_path(shardings)[0]:
            sharding_by_path[partitioning.param_path(keypath)] = sharding
    np_dtype = np.dtype(jax.numpy.dtype(dtype))

    with contextlib.ExitStack() as stack:
        handles: dict[Path, Any] = {}

        def handle(file: Path) -> Any:
            if file not in handles:
                try:
                    handles[file] = stack.enter_context(safe_open(str(file), framework="numpy"))
                except Exception as err:  # safetensors raises its own error types
                    raise CheckpointError(f"{file}: cannot open as safetensors: {err}") from None
            return handles[file]

        progress = tqdm(
            total=len(expected), desc=f"loading {folder.name}", unit="tensor", disable=None
        )

        def load(keypath, leaf):
            path = partitioning.param_path(keypath)
            name, transposed = hf_tensor_name(path)
            file = tensor_files[name]
            sharding = sharding_by_path.get(path)
            array = _read_tensor(
                handle(file), file, name, tuple(leaf.shape), transposed, np_dtype, sharding
            )
            progress.update()
            return array

        state = jax.tree_util.tree_map_with_path(load, abstract_state)
        progress.close()
    return nnx.merge(graphdef, state)


def save_pretrained(
    model: Transformer, path: str | Path, *, max_shard_size: int = 5 * 10**9
) -> Path:
    """Write `model` as a Hugging Face folder (config.json + safetensors, sharded above a size)."""
    folder = Path(path)
    folder.mkdir(parents=True, exist_ok=True)
    config: ModelConfig = model.config
    _write_config(config, folder / CONFIG_FILE)
    state = nnx.state(model, nnx.Param)
    leaves = []
    for keypath, leaf in jax.tree_util.tree_flatten_with_path(state)[0]:
        name, transposed = hf_tensor_name(partitioning.param_path(keypath))
        leaves.append((name, transposed, leaf))
    shards: list[list[tuple[str, bool, jax.Array]]] = [[]]
    shard_bytes = 0
    for entry in leaves:
        size = entry[2].size * entry[2].dtype.itemsize
        if shards[-1] and shard_bytes + size > max_shard_size:
            shards.append([])
            shard_bytes = 0
        shards[-1].append(entry)
        shard_bytes += size
    for stale in folder.glob("model*.safetensors*"):
        if stale.name in (SINGLE_FILE, INDEX_FILE) or _SHARD_FILE.match(stale.name):
            stale.unlink()
    names = (
        [SINGLE_FILE]
        if len(shards) == 1
        else [f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors" for i in range(len(shards))]
    )
    weight_map: dict[str, str] = {}
    total = 0
    for file_name, shard in tqdm(
        list(zip(names, shards)), desc=f"saving {folder.name}", unit="shard", disable=None
    ):
        tensors = {}
        for name, transposed, leaf in shard:
            array = _to_host(leaf)
            tensors[name] = np.ascontiguousarray(array.T if transposed else array)
            weight_map[name] = file_name
            total += array.nbytes
        if jax.process_index() == 0:
            save_file(tensors, str(folder / file_name), metadata={"format": "pt"})
    if len(shards) > 1 and jax.process_index() == 0:
        index = {"metadata": {"total_size": total}, "weight_map": dict(sorted(weight_map.items()))}
        (folder / INDEX_FILE).write_text(json.dumps(index, indent=2) + "\n")
    if jax.process_index() == 0:  # last: it seals what is on disk
        write_manifest(folder, [CONFIG_FILE, *names, *([INDEX_FILE] if len(shards) > 1 else [])])
    return folder


# ------------------------------------------------------------------------------------ internals


def _tensor_files(folder: Path) -> dict[str, Path]:
    """Map each tensor name to the file holding it, checking that every listed shard exists."""
    index_path = folder / INDEX_FILE
    if index_path.is_file():
        try:
            weight_map = json.loads(index_path.read_text())["weight_map"]
        except (json.JSONDecodeError, KeyError, TypeError) as err:
            raise CheckpointError(
                f"{index_path}: not a valid safetensors index ({err!r})"
            ) from None
        by_file: dict[str, list[str]] = {}
        for name, file_name in weight_map.items():
            by_file.setdefault(file_name, []).append(name)
        for file_name, names in sorted(by_file.items()):
            if not (folder / file_name).is_file():
                more = f" and {len(names) - 1} more" if len(names) > 1 else ""
                raise CheckpointError(
                    f"{index_path}: shard {folder / file_name} is missing; it should hold tensor "
                    f"{sorted(names)[0]}{more}"
                )
        return {name: folder / file_name for name, file_name in weight_map.items()}
    files = (
        [folder / SINGLE_FILE]
        if (folder / SINGLE_FILE).is_file()
        else sorted(folder.glob("*.safetensors"))
    )
    if not files:
        extra = (
            " (PyTorch .bin checkpoints are not read: convert them to safetensors)"
            if any(folder.glob("*.bin"))
            else ""
        )
        raise CheckpointError(
            f"{folder}: no {SINGLE_FILE}, {INDEX_FILE} or *.safetensors file{extra}"
        )
    result: dict[str, Path] = {}
    for file in files:
        try:
            with safe_open(str(file), framework="numpy") as handle:
                names = list(handle.keys())
        except Exception as err:
            raise CheckpointError(f"{file}: cannot open as safetensors: {err}") from None
        for name in names:
            if name in result:
                raise CheckpointError(f"tensor {name} is in both {result[name]} and {file}")
            result[name] = file
    return result


def _check_names(
    folder: Path, config: ModelConfig, expected: dict[str, Any], tensor_files: dict[str, Path]
) -> None:
    missing = sorted(set(expected) - set(tensor_files))
    if missing:
        where = folder / (INDEX_FILE if (folder / INDEX_FILE).is_file() else SINGLE_FILE)
        raise CheckpointError(
            f"{where}: tensor {missing[0]} is missing ({len(missing)} missing in all); "
            f"{folder / CONFIG_FILE} describes a {config.family} model that needs it"
        )
    for name in sorted(set(tensor_files) - set(expected)):
        if _IGNORED_ALWAYS.search(name) or (
            name == "lm_head.weight" and config.tie_word_embeddings
        ):
            continue
        raise CheckpointError(
            f"{tensor_files[name]}: unexpected tensor {name} for the {config.family} architecture "
            f"described by {folder / CONFIG_FILE}"
        )


def _read_tensor(
    handle: Any,
    file: Path,
    name: str,
    shape: tuple[int, ...],
    transposed: bool,
    dtype: np.dtype,
    sharding: Any,
) -> jax.Array:
    try:
        tensor = handle.get_slice(name)
    except Exception as err:
        raise CheckpointError(f"{file}: cannot read tensor {name}: {err}") from None
    file_shape = tuple(tensor.get_shape())
    want = shape[::-1] if transposed else shape
    if file_shape != want:
        raise CheckpointError(
            f"{file}: tensor {name} has shape {list(file_shape)}, the config implies {list(want)}"
        )

    def block(index: tuple[slice, ...]) -> np.ndarray:
        data = tensor[tuple(index[::-1]) if transposed else tuple(index)]
        return np.ascontiguousarray((data.T if transposed else data).astype(dtype, copy=False))

    if sharding is None:
        return jax.device_put(block(tuple(slice(None) for _ in shape)))
    blocks: dict[tuple, np.ndarray] = {}  # replicated devices share one read

    def read(index: tuple[slice, ...]) -> np.ndarray:
        key = tuple((s.start, s.stop) for s in index)
        if key not in blocks:
            blocks[key] = block(index)
        return blocks[key]

    # dtype given: a process that holds no device of the mesh (a rollout mesh of its own)
    # reads no block
    return jax.make_array_from_callback(shape, sharding, read, dtype=np.dtype(dtype))


def _to_host(array: jax.Array) -> np.ndarray:
    if not array.is_fully_addressable:
        from jax.experimental import multihost_utils

        array = multihost_utils.process_allgather(array, tiled=True)
    return np.asarray(jax.device_get(array))


def _write_config(config: ModelConfig, path: Path) -> None:
    data = config.to_hf().to_dict()
    rope = data.get("rope_parameters") or {}
    data["rope_theta"] = rope.get("rope_theta", config.rope_theta)
    if rope.get("rope_type", "default") != "default":
        data["rope_scaling"] = {k: v for k, v in rope.items() if k != "rope_theta"}
    if jax.process_index() == 0:
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
