"""Train-step throughput: the full jitted GRPO step against a bare jitted forward + backward of
the same model on the same packed batch, same process. Prints one JSON object.

    .venv/bin/python benchmarks/train_step.py                        # tiny and small, CPU fp32
    .venv/bin/python benchmarks/train_step.py --config small --rows 4 --horizon 1024
    .venv/bin/python benchmarks/train_step.py --model my_1b.yaml --dtype bfloat16   # GPU / TPU

What is measured, per model config: a batch of `--rows` rows of `--horizon` tokens packed from
random groups (prompt + completion trajectories, every row filled to within a trajectory of
N), then

* ``step``: `jaxopt_rl.training.step.make_train_step` (GRPO loss, diagnostics, `--microbatches`
  scan, AdamW with clipping and schedule, donation, explicit shardings);
* ``bare``: ``jax.jit(jax.grad(nll))`` of the same model on the same rows (positions and segment
  ids included): the model's own forward + backward, no optimizer, no diagnostics.

Both are compiled first (``compile_s``), then run alternately `--repeats` times so that load from
other processes hits both alike; medians are reported. ``trained_tokens_per_s`` counts real
(non-padding) tokens of the batch per second of the full step; ``ratio`` is step time / bare
time (target <= 1.2: the step adds little beyond the model). Memory: ``peak_rss_mb`` is the
process's peak resident set (CPU), ``step_temp_mb`` / ``bare_temp_mb`` XLA's temporary buffers
of each compiled function, ``device_peak_mb`` the accelerator's peak where it reports one.
``mfu`` is 6 x params x tokens (+ attention) per second over the device's peak, printed only
for devices whose peak is known (`PEAK_FLOPS`).

Holds ``/tmp/jaxopt-bench.lock`` (``--lock ''`` for none) so benchmarks do not overlap.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from bench_lock import DEFAULT_LOCK, bench_lock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# Dense bf16 peak FLOP/s by `device_kind` substring (vendor datasheets, no sparsity).
PEAK_FLOPS = {
    "H200": 989e12,
    "H100": 989e12,
    "A100": 312e12,
    "TPU v4": 275e12,
    "TPU v5 lite": 197e12,
    "TPU v5e": 197e12,
    "TPU v5p": 459e12,
    "TPU v6": 918e12,
}

DEFAULTS = {"tiny": dict(rows=8, horizon=512), "small": dict(rows=4, horizon=512)}


def packed_batch(rng, rows, horizon, vocab, group_size=4):
    """Random groups packed into `rows` rows of `[R, L]` by the trainer's batch builder (more
    are drawn than fit; the rest are left over)."""
    import jax

    from jaxopt_rl.rollouts.testing import synthetic_rollouts
    from jaxopt_rl.training.batch import BatchBuilder
    from jaxopt_rl.training.config import GRPOConfig

    prompts, completions, logps, rewards, tokens = [], [], [], [], 0
    while tokens < rows * horizon * 1.5 and len(prompts) < 10_000:  # extra: leftovers fill gaps
        prompts.append(rng.integers(3, vocab, size=int(rng.integers(16, 64))).astype(np.int32))
        lengths = rng.integers(8, max(horizon // 2 - 64, 9), size=group_size)
        completions.append([rng.integers(3, vocab, size=int(n)).astype(np.int32)
                            for n in lengths])
        logps.append([-rng.random(len(c)).astype(np.float32) for c in completions[-1]])
        rewards.append(rng.random(group_size).astype(np.float32))
        tokens += sum(len(prompts[-1]) + len(c) for c in completions[-1])
    builder = BatchBuilder(GRPOConfig(horizon=horizon, rows=rows, max_staleness=0), len(prompts))
    builder.offer(synthetic_rollouts(prompts, completions, np.stack(rewards), logprobs=logps), 0)
    step_batch = builder.take(0)
    return jax.tree.map(lambda a: a[0], step_batch.batch), step_batch.tokens


def bench_one(name, model_config, args):
    import jax
    import jax.numpy as jnp

    from jaxopt_rl.training import grpo
    from jaxopt_rl.training.config import (
        GRPOConfig,
        MeshConfig,
        OptimizerConfig,
        RolloutConfig,
        TrainConfig,
    )
    from jaxopt_rl.training.mesh import mesh_from_config, put_global
    from jaxopt_rl.training.packing import split_microbatches
    from jaxopt_rl.training.state import init_train_state
    from jaxopt_rl.training.step import (
        StepSettings,
        batch_sharding,
        make_train_step,
        token_logprobs,
    )

    defaults = DEFAULTS.get(name, dict(rows=8, horizon=2048))
    rows, horizon = args.rows or defaults["rows"], args.horizon or defaults["horizon"]
    config = TrainConfig(
        model=model_config,
        optimizer=OptimizerConfig(learning_rate=1e-4, warmup_steps=10),
        mesh=MeshConfig(data=1, fsdp=-1, tensor=1),
        grpo=GRPOConfig(horizon=horizon, rows=rows, microbatches=args.microbatches),
        rollout=RolloutConfig(max_new_tokens=horizon // 2),
        steps=1000,
    )
    mesh = mesh_from_config(config.mesh)
    graphdef, state, shardings, tx = init_train_state(config, mesh)
    result, real_tokens = packed_batch(np.random.default_rng(0), rows, horizon, model_config.vocab_size)
    per_micro = rows // args.microbatches
    sharding = batch_sharding(mesh, per_micro)
    batch = put_global(split_microbatches(result, args.microbatches), sharding)
    step = make_train_step(graphdef, tx, StepSettings.from_config(config.grpo), shardings, mesh,
                           per_micro)
    flat_sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec(*sharding.spec[1:]))
    flat = put_global(result, flat_sharding)

    def nll(params, b):
        logp, _ = token_logprobs(graphdef, params, b.tokens, b.positions, b.segment_ids)
        return grpo.sft_loss(logp, b.loss_mask, horizon=float(rows * horizon))

    bare = jax.jit(jax.grad(nll), in_shardings=(shardings.params, flat_sharding),
                   out_shardings=shardings.params)

    start = time.perf_counter()
    step_compiled = step.lower(state, batch).compile()
    step_compile = time.perf_counter() - start
    start = time.perf_counter()
    bare_compiled = bare.lower(state.params, flat).compile()
    bare_compile = time.perf_counter() - start

    holder = {"state": state}

    def run_step():
        holder["state"], metrics = step_compiled(holder["state"], batch)
        jax.block_until_ready(metrics)

    def run_bare():
        jax.block_until_ready(bare_compiled(holder["state"].params, flat))

    run_step(), run_bare()  # warm
    times = {"step": [], "bare": []}
    for _ in range(args.repeats):
        for key, fn in (("step", run_step), ("bare", run_bare)):
            start = time.perf_counter()
            fn()
            times[key].append(time.perf_counter() - start)
    step_s, bare_s = statistics.median(times["step"]), statistics.median(times["bare"])
    params = sum(int(np.prod(x.shape)) for x in jax.tree.leaves(state.params))
    positions = rows * horizon
    attention = 12 * model_config.num_layers * model_config.num_heads * model_config.head_dim
    model_flops = 6 * params * positions + attention * rows * horizon * horizon / 2
    device = jax.devices()[0]
    out = {
        "config": name,
        "params": params,
        "dtype": f"{model_config.param_dtype}/{model_config.compute_dtype}",
        "rows": rows,
        "horizon": horizon,
        "microbatches": args.microbatches,
        "real_tokens": real_tokens,
        "fill": round(real_tokens / positions, 3),
        "step_ms": round(step_s * 1e3, 2),
        "bare_ms": round(bare_s * 1e3, 2),
        "ratio": round(step_s / bare_s, 3),
        "trained_tokens_per_s": round(real_tokens / step_s, 1),
        "bare_tokens_per_s": round(real_tokens / bare_s, 1),
        "compile_s": {"step": round(step_compile, 2), "bare": round(bare_compile, 2)},
        "step_temp_mb": _temp_mb(step_compiled),
        "bare_temp_mb": _temp_mb(bare_compiled),
        "model_tflops_per_s": round(model_flops / step_s / 1e12, 4),
    }
    peak = next((v for k, v in PEAK_FLOPS.items() if k in device.device_kind), None)
    if peak is not None:
        out["mfu"] = round(model_flops / step_s / (peak * len(jax.devices())), 4)
    stats = device.memory_stats() or {}
    if "peak_bytes_in_use" in stats:
        out["device_peak_mb"] = round(stats["peak_bytes_in_use"] / 2**20, 1)
    del jnp
    return out


def _temp_mb(compiled):
    try:
        analysis = compiled.memory_analysis()
        return round(analysis.temp_size_in_bytes / 2**20, 1)
    except Exception:  # not every backend reports it
        return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", action="append", choices=sorted(DEFAULTS),
                        help="configs/model/<name>.yaml (repeatable; default: tiny and small)")
    parser.add_argument("--model", type=Path, help="a model YAML instead of --config")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"),
                        help="compute dtype (default: the config's)")
    parser.add_argument("--param-dtype", choices=("float32", "bfloat16"),
                        help="parameter dtype (default: the config's)")
    parser.add_argument("--rows", type=int, help="packed rows R per step")
    parser.add_argument("--horizon", type=int, help="tokens per row N")
    parser.add_argument("--microbatches", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--lock", default=DEFAULT_LOCK)
    args = parser.parse_args(argv)

    import jax

    from jaxopt_rl.config import load_config
    from jaxopt_rl.model.config import ModelConfig

    targets = [(p.stem, p) for p in [args.model]] if args.model else [
        (name, ROOT / "configs" / "model" / f"{name}.yaml") for name in args.config or DEFAULTS
    ]
    results = []
    with bench_lock(args.lock):
        for name, path in targets:
            model = load_config(ModelConfig, path)
            if args.dtype:
                model = dataclasses.replace(model, compute_dtype=args.dtype)
            if args.param_dtype:
                model = dataclasses.replace(model, param_dtype=args.param_dtype)
            results.append(bench_one(name, model, args))
    report = {
        "benchmark": "train_step",
        "backend": jax.default_backend(),
        "device": jax.devices()[0].device_kind,
        "devices": len(jax.devices()),
        "machine": platform.machine(),
        "target_ratio": 1.2,
        "results": results,
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
