"""`plan_run`: compile a run's real train step and rollout sampler for an accelerator slice on
any host (ahead of time, against compile-only devices), and report what each needs per chip.

What is compiled is what `train` runs: the state from `abstract_train_state` on the config's
mesh laid over the slice's devices, the step from `make_train_step` on a ``[U, R, N]`` batch,
and the group sampler of `rollout.sampler` (one prefill per prompt, then decode over a cache
that grows by segments) at ``prompts_per_call x group_size`` rows, `target.prompt_tokens` of
prompt and `rollout.max_new_tokens`. For the sampler the call with the largest peak counts:
the prefill, or the last decode segment, which holds the cache of the previous segment and
the grown one at once.

Memory is XLA's (`Compiled.memory_analysis()`, per chip): arguments, temporaries, outputs and
the donated bytes that alias an argument; peak = arguments + temporaries + outputs - aliased.
That is a measurement of the compiled program's buffers, not of a run. The train part also
lists the parameter dimensions that its mesh axes do not divide (`replicated_dims`: each is
replicated along those axes, so whole on every chip). Everything with a time in it is a
projection: FLOPs and HBM bytes from the model's own count (`costs.py`, since XLA's cost
analysis counts a loop body once), the roofline time ``max(FLOPs / peak, bytes /
bandwidth)``, and the MFU it implies. The roofline leaves out collectives (FSDP gathers and
reductions over ICI or NVLink), kernels running below peak, and the host.
"""

from __future__ import annotations

import dataclasses
import math
import re
import time
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding, PartitionSpec

from jaxopt_rl.model import partitioning
from jaxopt_rl.planning import costs
from jaxopt_rl.planning.hardware import Slice, compile_devices
from jaxopt_rl.sampling.compact import compiled_group_prefill, compiled_segment
from jaxopt_rl.sampling.host import loop_settings
from jaxopt_rl.sampling.state import SamplingState
from jaxopt_rl.training.config import TrainConfig
from jaxopt_rl.training.mesh import meshes_from_config
from jaxopt_rl.training.packing import PackedBatch
from jaxopt_rl.training.state import abstract_train_state
from jaxopt_rl.training.step import StepSettings, batch_sharding, make_train_step
from jaxopt_rl.training.transfer import sampler_dtype

HEADROOM_FLOOR = 0.10  # a part "fits" with at least this share of HBM left over
_RULES = partitioning.DEFAULT_RULES


@dataclasses.dataclass
class Part:
    """One compiled program's figures per chip (the JSON's ``train`` / ``sampler``)."""

    argument_bytes: int
    temp_bytes: int
    output_bytes: int
    alias_bytes: int
    peak_bytes: int
    headroom: float
    fits: bool
    flops: float  # projected, all chips, per call (train: a step; sampler: a decode step)
    hbm_bytes_accessed: float  # projected, per chip, same unit
    roofline_s: float
    compile_s: float
    largest_buffers: list[str]
    extra: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        out = {k: v for k, v in dataclasses.asdict(self).items() if k != "extra"}
        out.update(self.extra)
        return out


def plan_run(config: TrainConfig, slice_: Slice, *, log=print) -> dict[str, Any]:
    """The plan of `config` on `slice_` as the JSON of `jaxopt-rl plan` (see the command)."""
    devices = compile_devices(slice_)
    platform = devices[0].platform
    config = dataclasses.replace(config, model=config.model.for_platform(platform))
    mesh, rollout = meshes_from_config(config.mesh, devices=devices)
    split = rollout is not mesh
    log(f"planning {config.model.num_params / 1e9:.2f} B parameters on {slice_.name} "
        f"({slice_.chips} chips of {slice_.chip.hbm_bytes / 2**30:.2f} GiB), mesh "
        f"{dict(mesh.shape)}" + (f", rollout mesh {dict(rollout.shape)}" if split else "")
        + f"; attention {config.model.attention}, remat {config.model.remat}, "
        f"scan {config.model.scan_layers}, log-prob chunk {config.model.logprob_chunk}")
    train = plan_train(config, mesh, slice_, log=log)
    sampler = plan_sampler(config, rollout, slice_, log=log)
    return {
        "config": "",
        "topology": slice_.name,
        "libtpu_topology": slice_.topology if slice_.chip.platform == "tpu" else None,
        "chips": slice_.chips,
        "hbm_per_chip_bytes": slice_.chip.hbm_bytes,
        "fits": train.fits and sampler.fits,
        "mesh": dict(mesh.shape),
        # mesh.rollout_devices: the sampler's own mesh, and the bytes one weight copy moves to
        # it (every loop.weight_sync_every steps, in the dtype of rollout.weight_dtype)
        "rollout_mesh": dict(rollout.shape) if split else None,
        "weight_transfer_bytes": _weight_copy_bytes(config, mesh) if split else 0,
        "projection_note": "flops, hbm_bytes_accessed, roofline_s, projected_mfu, "
                           "decode_roofline_s and tokens_per_s_per_chip are projections (the "
                           "model's own count over the chip's peak rates), not measurements; "
                           "memory figures are the compiler's",
        "train": train.to_json(),
        "sampler": sampler.to_json(),
    }


def plan_train(config: TrainConfig, mesh, slice_: Slice, *, log=print) -> Part:
    grpo = config.grpo
    rows_per_microbatch = grpo.rows // grpo.microbatches
    started = time.perf_counter()
    graphdef, abstract, shardings, optimizer = abstract_train_state(config, mesh, _RULES)
    step = make_train_step(graphdef, optimizer, StepSettings.from_config(grpo), shardings, mesh,
                           rows_per_microbatch, _RULES)
    sharding = batch_sharding(mesh, rows_per_microbatch, _RULES)
    shape = (grpo.microbatches, rows_per_microbatch, grpo.horizon)
    ints = jax.ShapeDtypeStruct(shape, jnp.int32, sharding=sharding)
    floats = jax.ShapeDtypeStruct(shape, jnp.float32, sharding=sharding)
    batch = PackedBatch(ints, ints, ints, floats, floats, floats)
    log("compiling the train step ...")
    lowered = step.lower(abstract, batch)
    state_bytes = _shard_bytes(abstract)
    compiled, memory = _compile(lowered, arguments=state_bytes + _shard_bytes(batch),
                                outputs=state_bytes, aliased=state_bytes)
    compile_s = time.perf_counter() - started
    tensor = mesh.shape["tensor"]
    trajectory = config.target.prompt_tokens + config.rollout.max_new_tokens
    cost = costs.train_step_cost(config.model, rows=grpo.rows, horizon=grpo.horizon,
                                 trajectory=trajectory, chips=slice_.chips, tensor=tensor)
    chip = slice_.chip
    roofline_s = max(cost.executed_flops / (slice_.chips * chip.peak_bf16_flops),
                     cost.hbm_bytes_per_chip / chip.hbm_bytes_per_s)
    extra = {
        "model_flops": cost.model_flops,
        "tokens": grpo.rows * grpo.horizon,
        "projected_mfu": cost.model_flops / (slice_.chips * chip.peak_bf16_flops * roofline_s),
        # parameter dimensions the mesh axes do not divide: replicated, so whole on every chip
        "replicated_dims": partitioning.explain_fallbacks(abstract.params, mesh, _RULES),
        "xla_cost_analysis": _xla_cost(compiled),
    }
    log(f"train step compiled in {compile_s:.0f} s")
    return _part(memory, chip.hbm_bytes, cost.executed_flops, cost.hbm_bytes_per_chip,
                 roofline_s, compile_s, extra)


def plan_sampler(config: TrainConfig, mesh, slice_: Slice, *, log=print) -> Part:
    rollout, model = config.rollout, config.model
    if rollout.sampler != "compact":
        raise ValueError(f"rollout.sampler: plan compiles the compact group sampler (the "
                         f"default), not {rollout.sampler!r}")
    started = time.perf_counter()
    graphdef, abstract, _, _ = abstract_train_state(config, mesh, _RULES)
    params = _sampler_params(config, abstract.params)
    settings = loop_settings(model.vocab_size, rollout.max_new_tokens, rollout.temperature,
                             rollout.top_k, rollout.top_p, model.eos_token_ids, (),
                             model.pad_token_id or 0, rollout.cache_segments)
    shards = partitioning.batch_shard_count(mesh, _RULES)
    prompts = _round_up(rollout.prompts_per_call, shards)
    rows = _round_up(rollout.prompts_per_call * rollout.group_size, shards)
    prompt_len = _round_up(config.target.prompt_tokens, rollout.prompt_multiple)
    row = _rows_sharding(mesh)
    prefill = compiled_group_prefill(graphdef, settings, mesh, _RULES)
    prefill_args = (params, row((prompts, prompt_len), jnp.int32), row((prompts,), jnp.int32),
                    row((rows,), jnp.int32), row((rows,), jnp.int32),
                    jax.ShapeDtypeStruct((), jnp.uint32, sharding=_replicated(mesh)))
    log(f"compiling the sampler: prefill of {prompts} prompts x {prompt_len} tokens, "
        f"{rows} rows ...")
    state = jax.eval_shape(prefill, *prefill_args)
    prefill_memory = _compile(prefill.lower(*prefill_args), arguments=_shard_bytes(prefill_args),
                              outputs=_shard_bytes(_state_shardings(state, mesh)), aliased=0)
    limits = settings.segment_limits()
    for limit in limits[:-1]:  # the shapes the last segment starts from
        segment = compiled_segment(graphdef, settings, mesh, _RULES, prompt_len, limit)
        state = jax.eval_shape(segment, params, _state_shardings(state, mesh),
                               *_segment_scalars(mesh, rows))
    last = compiled_segment(graphdef, settings, mesh, _RULES, prompt_len, limits[-1])
    log(f"compiling the last decode segment: {rows} rows, cache of "
        f"{prompt_len + limits[-1]} slots ...")
    decode_args = (params, _state_shardings(state, mesh), *_segment_scalars(mesh, rows))
    grown = jax.eval_shape(last, *decode_args)
    decode_memory = _compile(last.lower(*decode_args), arguments=_shard_bytes(decode_args),
                             outputs=_shard_bytes(_state_shardings(grown, mesh)), aliased=0)
    compile_s = time.perf_counter() - started
    log(f"sampler compiled in {compile_s:.0f} s")
    (compiled, memory), largest_call = max(
        ((prefill_memory, "prefill"), (decode_memory, "decode")), key=lambda c: c[0][1].peak)
    tensor = mesh.shape["tensor"]
    rows_per_chip = rows / shards
    mean_slots = prompt_len + float(np.mean([_segment_limit(limits, i) for i in
                                             range(settings.max_new_tokens)]))
    step_bytes = costs.decode_step_bytes_per_chip(model, rows_per_chip=rows_per_chip,
                                                  cache_slots=mean_slots, tensor=tensor)
    step_flops = 2 * rows * (model.num_params + mean_slots * 2 * model.num_layers
                             * model.num_heads * model.head_dim)
    chip = slice_.chip
    decode_s = max(step_bytes / chip.hbm_bytes_per_s,
                   step_flops / (slice_.chips * chip.peak_bf16_flops))
    extra = {
        "decode_roofline_s": decode_s,
        "tokens_per_s_per_chip": rows / decode_s / slice_.chips,
        "rows": rows,
        "prompt_tokens": prompt_len,
        "max_new_tokens": settings.max_new_tokens,
        "cache_slots": prompt_len + limits[-1],
        "largest_call": largest_call,
        "xla_cost_analysis": _xla_cost(compiled),
    }
    return _part(memory, chip.hbm_bytes, step_flops, step_bytes, decode_s, compile_s, extra)


# ------------------------------------------------------------------------------------ internals


def _sampler_params(config: TrainConfig, params):
    """The samplers' copy as abstract arrays (`rollout.weight_dtype`)."""
    if config.rollout.weight_dtype != "compute":
        return params
    return jax.tree.map(lambda leaf: jax.ShapeDtypeStruct(
        leaf.shape, sampler_dtype(leaf, config.model.compute_dtype), sharding=leaf.sharding),
        params)


def _weight_copy_bytes(config: TrainConfig, mesh) -> int:
    """The bytes one weight copy moves to the rollout mesh (in the samplers' dtype)."""
    _, abstract, _, _ = abstract_train_state(config, mesh, _RULES)
    return int(sum(math.prod(leaf.shape) * jnp.dtype(leaf.dtype).itemsize
                   for leaf in jax.tree.leaves(_sampler_params(config, abstract.params))))


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


def _replicated(mesh) -> NamedSharding:
    return NamedSharding(mesh, PartitionSpec())


def _rows_sharding(mesh):
    def make(shape, dtype):
        return jax.ShapeDtypeStruct(
            shape, dtype, sharding=partitioning.batch_sharding(mesh, len(shape), _RULES))
    return make


def _segment_scalars(mesh, rows: int):
    return (jax.ShapeDtypeStruct((rows,), jnp.int32,
                                 sharding=partitioning.batch_sharding(mesh, 1, _RULES)),
            jax.ShapeDtypeStruct((), jnp.int32, sharding=_replicated(mesh)),
            jax.ShapeDtypeStruct((), jnp.int32, sharding=_replicated(mesh)))


def _state_shardings(state: SamplingState, mesh) -> SamplingState:
    """Abstract `state` with the layout the sampler keeps: rows over the batch axes, the cache
    by the partition rules, the step counter replicated."""
    def rows(leaf):
        sharding = (_replicated(mesh) if leaf.ndim == 0
                    else partitioning.batch_sharding(mesh, leaf.ndim, _RULES))
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)

    def cache(leaf):
        sharding = partitioning.sharding_for(leaf.shape, partitioning.CACHE_LOGICAL_AXES, mesh,
                                             _RULES)
        return jax.ShapeDtypeStruct(leaf.shape, leaf.dtype, sharding=sharding)

    laid = jax.tree.map(rows, state.replace(cache=None))
    kv = state.cache
    return laid.replace(cache=kv.replace(keys=tuple(map(cache, kv.keys)),
                                         values=tuple(map(cache, kv.values)),
                                         length=rows(kv.length), start_B=rows(kv.start_B)))


def _segment_limit(limits: tuple[int, ...], token: int) -> int:
    """Cache slots beyond the prompt a decode step at `token` reads (its segment's limit: the
    cache grows by whole segments)."""
    return next(limit for limit in limits if token < limit)


@dataclasses.dataclass(frozen=True)
class Memory:
    """A compiled program's buffers per chip (XLA's `memory_analysis()`), or, where the TPU
    compiler refuses a program that cannot fit, the temporaries its error states with our
    count of the arguments and outputs (`refused` holds the compiler's message)."""

    argument: int
    temp: int
    output: int
    alias: int
    largest_buffers: list[str]
    refused: str | None = None

    @property
    def peak(self) -> int:
        return self.argument + self.temp + self.output - self.alias


_REFUSAL = re.compile(r"HLO temporaries \(([\d.]+)([KMGT]?)\) exceeds available HBM")
_UNITS = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _compile(lowered, *, arguments: int, outputs: int, aliased: int):
    """``(compiled or None, Memory)``. The TPU compiler checks a program against the chip's HBM
    and refuses one that does not fit, stating only its temporaries: the rest is counted from
    the program's inputs and outputs, and the largest arrays are read from the program before
    optimisation (the compiled one does not exist)."""
    try:
        compiled = lowered.compile()
    except jax.errors.JaxRuntimeError as error:
        match = _REFUSAL.search(str(error))
        if "RESOURCE_EXHAUSTED" not in str(error) or match is None:
            raise
        temp = int(float(match.group(1)) * _UNITS[match.group(2)])
        # shapes of the whole program before SPMD partitioning: divide by the shards
        buffers = [f"{line} [global shape, before partitioning]"
                   for line in largest_buffers(lowered.as_text(dialect="hlo"))]
        return None, Memory(arguments, temp, outputs, aliased, buffers,
                            refused=str(error).splitlines()[0])
    memory = compiled.memory_analysis()
    return compiled, Memory(memory.argument_size_in_bytes, memory.temp_size_in_bytes,
                            memory.output_size_in_bytes, memory.alias_size_in_bytes,
                            largest_buffers(compiled.as_text()))


def _shard_bytes(tree) -> int:
    """Bytes one chip holds of abstract arrays with shardings (the largest shard of each)."""
    total = 0
    for leaf in jax.tree.leaves(tree):
        shape = leaf.sharding.shard_shape(leaf.shape) if leaf.sharding is not None else leaf.shape
        total += math.prod(shape) * _itemsize(leaf.dtype)
    return total


def _itemsize(dtype) -> int:
    if jax.dtypes.issubdtype(dtype, jax.dtypes.prng_key):
        return 8  # a threefry key: two uint32 words
    return np.dtype(dtype).itemsize


def _xla_cost(compiled) -> dict[str, float] | None:
    """XLA's own flops and bytes (each loop body counted once; none on the GPU path)."""
    analysis = None if compiled is None else compiled.cost_analysis()
    if isinstance(analysis, list):
        analysis = analysis[0] if analysis else None
    if not analysis:
        return None
    return {key: float(analysis[key]) for key in ("flops", "bytes accessed") if key in analysis}


def _part(memory: Memory, hbm_bytes: int, flops: float, hbm_bytes_accessed: float,
          roofline_s: float, compile_s: float, extra: dict[str, Any]) -> Part:
    headroom = 1 - memory.peak / hbm_bytes
    if memory.refused:
        extra = dict(extra, compiler_refused=memory.refused)
    return Part(
        argument_bytes=memory.argument, temp_bytes=memory.temp, output_bytes=memory.output,
        alias_bytes=memory.alias, peak_bytes=memory.peak, headroom=headroom,
        fits=headroom >= HEADROOM_FLOOR and memory.refused is None, flops=flops,
        hbm_bytes_accessed=hbm_bytes_accessed, roofline_s=roofline_s, compile_s=compile_s,
        largest_buffers=memory.largest_buffers, extra=extra)


_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%?([\w.\-]+) = (\w+)\[([\d,]*)\]\S* ([\w\-]+)\(")
_OP_NAME = re.compile(r'op_name="([^"]+)"')
_BYTES = {"pred": 1, "s8": 1, "u8": 1, "s16": 2, "u16": 2, "bf16": 2, "f16": 2, "s32": 4,
          "u32": 4, "f32": 4, "s64": 8, "u64": 8, "f64": 8}


def largest_buffers(hlo_text: str, count: int = 6) -> list[str]:
    """The largest arrays the compiled program produces, one line each: size, shape, the HLO
    instruction and the JAX operation it came from (XLA's metadata), biggest first. A reading
    of the program's text, not of XLA's buffer assignment: it says what dominates, not where
    each byte of the peak goes."""
    found: dict[tuple[str, str], tuple[int, str]] = {}
    for line in hlo_text.splitlines():
        match = _INSTRUCTION.match(line)
        if not match or match.group(2) not in _BYTES or match.group(4) in ("parameter",
                                                                             "bitcast", "tuple"):
            continue
        dims = [int(d) for d in match.group(3).split(",") if d]
        size = _BYTES[match.group(2)] * math.prod(dims)
        op = _OP_NAME.search(line)
        source = op.group(1) if op else match.group(4)
        shape = f"{match.group(2)}[{','.join(map(str, dims))}]"
        key = (shape, source)
        if key not in found or found[key][0] < size:
            found[key] = (size, f"{match.group(1)} {match.group(4)}")
    ranked = sorted(found.items(), key=lambda item: -item[1][0])[:count]
    return [f"{size / 2**30:.2f} GiB {shape} {what} ({source})"
            for (shape, source), (size, what) in ranked]
