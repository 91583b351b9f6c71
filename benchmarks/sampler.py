"""Sampler throughput: our jitted `lax.while_loop` sampler vs `transformers` `generate`, same
weights, same machine, same process. Prints one JSON object (and optionally a PNG).

    .venv/bin/python benchmarks/sampler.py                      # tiny config (4.2M params)
    .venv/bin/python benchmarks/sampler.py --config small --plot /tmp/sampler.png   # ~21M

What is measured: `--new-tokens` tokens after `--batch` random prompts of `--prompt-len` tokens
on CPU in float32, for greedy decoding and for temperature-1 sampling without truncation (the
RL setting); no EOS, so every row runs to the end. A random-weight model is built from
``configs/model/<config>.yaml``, written with our `save_pretrained`, and loaded by both sides
from that folder, so both run the same weights (`greedy_agreement`: the mean fraction of each
row's tokens before the two greedy outputs first differ; float32 rounding can flip a near-tie).
Each side is warmed up first (our compile time is reported as `compile_s`), then the two are run
alternately `--repeats` times so that load from other processes hits both alike; medians and
bests are reported, and `speedup_*` is transformers' time over ours.

Per decode step (``decode_step`` in each mode, and ``scaling``): each side is also run for one
token only (ours: the same call with every token a stop token, so the compiled shapes and the
prefill are the same; transformers: ``max_new_tokens=1``), interleaved with the full runs, and
``ms_per_step`` is ``(median full run - median one-token run) / (new_tokens - 1)``: the prefill
cancels out, so the figure is one decode step averaged over cache fills from P to P + N slots
(ours: `generate`'s default `cache_segments`). Two floors, each a jitted loop doing only what a
step cannot avoid (every output consumed, so XLA can skip nothing):

* ``matmul_floor_ms``: the model's weight matmuls at the same batch, the cost of streaming the
  weights once per step. Target: the batch-8 step <= 1.3x this floor. ``decode_step`` also
  times the KV floor below at this run's own cache (``kv_floor_over_matmul_floor``): a step
  must read the cache it attends over, so that ratio is the least ``ours_over_floor`` can be
  (tiny config, default 64 + 256 tokens: 7.3 MB of cache a step on average, 224 slots, against
  16.8 MB of weights; measured 1.13-1.15x on a 2-core VM, 2026-12-03). That KV floor lets
  XLA overlap the read with the q and o projections, which a step cannot (attention needs q,
  the o projection needs attention); ``kv_floor_in_order_over_matmul_floor`` times the same
  loop with the read between them.
* ``kv_floor_ms`` (in ``scaling``): the same matmuls plus one read of every layer's K and V
  cache at the number of slots the step attends over on average (``mean_cache_slots``: the
  prompt plus the mean of the segment limits, since the cache grows by segments), with one slot
  written per step as a decode step does. Target: the step <= 1.5x this floor at 192, 640 and
  1,664 slots (cache size at the end of the run).

``attention_as_read`` (in ``decode_step``): our same step with `layers.attend` swapped for
one read of the cache (`cache_read_attention`: the KV floor's max over every key and value, no
scores, softmax or value product), compiled apart from the real sampler. It prices everything
in the step but attention's arithmetic, so its ``over_floor`` is the least any attention
formulation could reach with the step's other kernels as they are.

Each floor runs as many steps as lie between the full and the one-token run, interleaved with
them, and gets the same statistic: ``ours_over_floor`` / ``over_kv_floor`` compare medians,
``best`` compares the minimum of each side's runs, ``*_paired`` is the median over rounds of
each round's step over that round's floor (a round's runs share the machine's load of the
moment). (Before 2026-12-03 the floors were timed
alone, before the runs they were compared with, by the best of a few 64-step loops, against the
step's median: on this VM a floor read 1.1-2.7 ms for the same code from one run to the next,
and once came out below the KV floor it is part of.)

``rollout`` (``--rollout``, on by default) is the GRPO workload: the demo's shipped SFT
checkpoint (``jaxopt_rl/demo/assets/sft_tiny``, the tiny config, whatever ``--config`` says),
the 8 prompts it was trained on x G = 16 at temperature 1 with its EOS, 512 new tokens at
most, so completion lengths are the SFT model's own. Useful tokens/s (tokens up to each row's
stop) of `generate`'s three schemes: the static sampler on each prompt repeated G times against
compaction and continuous batching (``--rollout-slots``), interleaved;
``same_tokens`` checks that each draws the static sampler's rows. Target: >= 1.5x static.
``batch64`` records tokens/s against `transformers.generate` at batch 64 (``--batch64-tokens``).

The run holds ``/tmp/jaxopt-bench.lock`` (``flock``) so that benchmarks on a shared box do not
overlap.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from bench_lock import bench_lock

ROOT = Path(__file__).resolve().parents[1]


def interleaved(runs: dict, repeats: int) -> tuple[dict, dict]:
    """Time each named callable `repeats` times, alternating between them; returns
    ({name: [seconds, ...]}, {name: last result})."""
    seconds: dict = {name: [] for name in runs}
    results: dict = {}
    for _ in range(repeats):
        for name, fn in runs.items():
            start = time.perf_counter()
            results[name] = fn()
            seconds[name].append(time.perf_counter() - start)
    return seconds, results


def summary(seconds: list[float], tokens: int) -> dict:
    return {
        "tokens_per_s_median": tokens / statistics.median(seconds),
        "tokens_per_s_best": tokens / min(seconds),
        "seconds_all": [round(x, 4) for x in seconds],
    }


def per_step_ms(full_s: list[float], one_s: list[float], new_tokens: int,
                stat=statistics.median) -> float:
    """A full run minus a one-token run (`stat` of each: median by default), per remaining
    decode step, in ms."""
    return (stat(full_s) - stat(one_s)) / (new_tokens - 1) * 1e3


def timed_chain(chain, *inputs):
    """`chain(*inputs)` compiled and run once, then returned as a no-argument callable that runs
    it to completion (to be timed interleaved with the sampler runs it is a floor for)."""
    import jax

    jax.block_until_ready(chain(*inputs))
    return lambda: jax.block_until_ready(chain(*inputs))


def matmul_floor(model, batch: int, steps: int):
    """A callable running `steps` steps of a jitted loop of just the model's weight matmuls at
    `batch` rows."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    graphdef, state = nnx.split(model)

    @jax.jit
    def chain(state, x_BD):
        m = nnx.merge(graphdef, state)

        def step(_, x_BD):
            for layer in m.layers:
                attn, mlp = layer.self_attn, layer.mlp
                k_BF, v_BF = attn.k_proj(x_BD), attn.v_proj(x_BD)
                kv_B1 = jnp.max(k_BF, -1, keepdims=True) + jnp.max(v_BF, -1, keepdims=True)
                x_BD = x_BD + attn.o_proj(attn.q_proj(x_BD)) + 1e-6 * kv_B1
                x_BD = x_BD + mlp.down_proj(mlp.gate_proj(x_BD) * mlp.up_proj(x_BD))
            return x_BD + 1e-6 * jnp.max(m.logits(x_BD), -1, keepdims=True)

        return jax.lax.fori_loop(0, steps, step, x_BD)

    return timed_chain(chain, state, jnp.ones((batch, model.config.hidden_size), jnp.float32))


def kv_floor(model, batch: int, slots: int, steps: int, in_order: bool = False):
    """A callable running `steps` steps of a jitted loop of the weight matmuls plus one read of
    every layer's KV cache of `slots` slots (one slot written per step, so the read cannot be
    hoisted). The read feeds the residual, so XLA may run it beside the q and o projections;
    `in_order`: it feeds the o projection's input instead, as attention's output does in a
    decode step, so it runs between the projections that a step's data dependencies put around
    it."""
    import jax
    import jax.numpy as jnp
    from flax import nnx

    from jaxopt_rl.model.transformer import KVCache

    config = model.config
    graphdef, state = nnx.split(model)
    cache = KVCache.empty(config, jnp.zeros((batch,), jnp.int32), slots)

    @jax.jit
    def chain(state, x_BD, keys, values):
        m = nnx.merge(graphdef, state)

        def step(i, carry):
            x_BD, keys, values = carry
            keys, values = list(keys), list(values)
            for index, layer in enumerate(m.layers):
                attn, mlp = layer.self_attn, layer.mlp
                k_BF, v_BF = attn.k_proj(x_BD), attn.v_proj(x_BD)
                shape = (batch, config.num_kv_heads, 1, config.head_dim)
                at = (0, 0, i % slots, 0)
                keys[index] = jax.lax.dynamic_update_slice(keys[index], k_BF.reshape(shape), at)
                values[index] = jax.lax.dynamic_update_slice(values[index], v_BF.reshape(shape), at)
                read_B1 = jnp.max(keys[index], axis=(1, 2, 3))[:, None] + jnp.max(
                    values[index], axis=(1, 2, 3)
                )[:, None]
                if in_order:
                    x_BD = x_BD + attn.o_proj(attn.q_proj(x_BD) + 1e-6 * read_B1)
                else:
                    x_BD = x_BD + attn.o_proj(attn.q_proj(x_BD)) + 1e-6 * read_B1
                x_BD = x_BD + mlp.down_proj(mlp.gate_proj(x_BD) * mlp.up_proj(x_BD))
            x_BD = x_BD + 1e-6 * jnp.max(m.logits(x_BD), -1, keepdims=True)
            return x_BD, tuple(keys), tuple(values)

        return jax.lax.fori_loop(0, steps, step, (x_BD, keys, values))[0]

    x_BD = jnp.ones((batch, config.hidden_size), jnp.float32)
    return timed_chain(chain, state, x_BD, cache.keys, cache.values)


def cache_read_attention(q_BLQE, k_BKSE, v_BKSE, mask_BLS):
    """A stand-in for `layers.attend` that only reads the cache, as the KV floor does (a max of
    every key and value), with no scores, softmax or value product."""
    import jax.numpy as jnp

    del mask_BLS
    read_B = jnp.max(k_BKSE, axis=(1, 2, 3)) + jnp.max(v_BKSE, axis=(1, 2, 3))
    return q_BLQE + 1e-6 * read_B[:, None, None, None]


def with_attention_as_read(sample):
    """`sample` (a function that calls `generate`) run with the model's attention replaced by
    `cache_read_attention`, compiled into a sampler cache of its own so the real sampler's
    compiled functions are neither used nor replaced."""
    from unittest import mock

    from jaxopt_rl.model import layers
    from jaxopt_rl.sampling import loop

    compiled = loop.JitCache()

    def run(*args, **kwargs):
        with mock.patch.object(layers, "attend", cache_read_attention), \
                mock.patch.object(loop, "_compiled", compiled):
            return sample(*args, **kwargs)

    return run


def step_and_floor_ms(seconds: dict, new_tokens: int) -> dict:
    """One decode step and its floor, in ms, from interleaved runs: the step is a full run less
    a one-token run over the `new_tokens - 1` steps between them (the prefill cancels), the
    floor a run of `new_tokens - 1` floor steps; "median" and "best" apply the same statistic
    to both sides."""
    out = {}
    for name, stat in (("median", statistics.median), ("best", min)):
        step = per_step_ms(seconds["full"], seconds["one"], new_tokens, stat)
        floor = stat(seconds["floor"]) / (new_tokens - 1) * 1e3
        out[name] = {"step_ms": round(step, 3), "floor_ms": round(floor, 3),
                     "over_floor": round(step / floor, 2)}
    # each round's runs share that moment's load on the machine: the median of the per-round
    # ratios is steadier than the ratio of the medians when the load drifts within a run
    rounds = zip(seconds["full"], seconds["one"], seconds["floor"], strict=True)
    out["paired"] = {"over_floor": round(statistics.median((f - o) / fl for f, o, fl in rounds), 2)}
    return out


def kv_cache_mb(config, batch: int, slots: int) -> float:
    return 2 * config.num_layers * batch * config.num_kv_heads * slots * config.head_dim * 4 / 1e6


def leading_agreement(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Mean over rows of the fraction of tokens before the first disagreement."""
    fractions = []
    for a, b in zip(ours, theirs):
        differ = np.flatnonzero(a != b)
        fractions.append((differ[0] if differ.size else len(a)) / len(a))
    return float(np.mean(fractions))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="tiny", help="name in configs/model/ or a YAML path")
    parser.add_argument("--decoding", choices=["greedy", "sample", "both"], default="both")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lock", default="/tmp/jaxopt-bench.lock", help="flock file ('' for none)")
    parser.add_argument("--plot", type=Path, default=None, help="also write a PNG bar chart here")
    parser.add_argument(
        "--scaling-prompts",
        default="512,1536",
        help="comma-separated longer prompt lengths for the ms/step-vs-cache scaling ('' for none)",
    )
    parser.add_argument("--scaling-new-tokens", type=int, default=128)
    parser.add_argument("--rollout", action=argparse.BooleanOptionalAction, default=True,
                        help="also time the GRPO rollout workload (shipped SFT model)")
    parser.add_argument("--rollout-slots", type=int, default=32)
    parser.add_argument("--rollout-repeats", type=int, default=3)
    parser.add_argument("--batch64-tokens", type=int, default=128, help="0: skip batch 64")
    args = parser.parse_args(argv)

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import torch
    import transformers

    from jaxopt_rl.config import load_config
    from jaxopt_rl.model import ModelConfig, init_model, load_pretrained, save_pretrained
    from jaxopt_rl.sampling import Greedy, generate
    from jaxopt_rl.sampling.loop import LoopSettings

    config_path = Path(args.config)
    if not config_path.suffix:
        config_path = ROOT / "configs" / "model" / f"{args.config}.yaml"
    config = load_config(ModelConfig, config_path)
    rng = np.random.default_rng(args.seed)
    prompts = rng.integers(5, config.vocab_size, size=(args.batch, args.prompt_len))
    decodings = ["greedy", "sample"] if args.decoding == "both" else [args.decoding]
    generated = args.batch * args.new_tokens
    lock = bench_lock(args.lock)

    with tempfile.TemporaryDirectory() as folder, lock:
        save_pretrained(init_model(config, seed=args.seed), folder)
        ours_model = load_pretrained(folder, dtype="float32")
        hf_model = transformers.AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32)
        hf_model.eval()
        hf_model.generation_config.eos_token_id = None  # every row runs to the end
        hf_model.generation_config.pad_token_id = config.pad_token_id or 0

        every_token = list(range(config.vocab_size))
        segments = inspect.signature(generate).parameters["cache_segments"].default

        def run_ours(
            decoding: str, one_token: bool = False, new_tokens=args.new_tokens, rows=prompts
        ):
            # one_token: the same compiled shapes (prefill, cache), stopped after the first draw
            temperature = 0.0 if decoding == "greedy" else 1.0
            stop = every_token if one_token else ()
            batch = generate(
                ours_model, rows.tolist(), new_tokens, temperature, stop_tokens=stop, seed=1
            )
            return batch.tokens

        def run_hf(decoding: str, new_tokens: int = args.new_tokens) -> np.ndarray:
            if decoding == "greedy":
                how = dict(do_sample=False)
            else:  # temperature 1, top-k / top-p off: the distribution ours samples from
                how = dict(do_sample=True, temperature=1.0, top_k=None, top_p=None)
            ids = torch.from_numpy(prompts)
            with torch.inference_mode():
                out = hf_model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=new_tokens,
                    min_new_tokens=new_tokens,
                    **how,
                )
            return out[:, args.prompt_len :].numpy()

        # the same step with attention only reading the cache (`cache_read_attention`): what
        # the step's other kernels cost beside the KV floor's read, whatever attention does
        run_read_attention = with_attention_as_read(run_ours)
        # as many floor steps as decode steps lie between a full run and a one-token run, so a
        # floor run is as long as the window it is compared with, and runs interleaved with it
        run_floor = matmul_floor(ours_model, args.batch, steps=args.new_tokens - 1)
        # what the same steps cost when they also read the cache they attend over: no decode
        # step can go below it, so kv_floor / matmul_floor bounds `ours_over_floor` from below
        limits = LoopSettings(Greedy(), args.new_tokens, cache_segments=segments).segment_limits()
        mean_slots = args.prompt_len + round(statistics.mean(limits))
        run_kv_floor = kv_floor(ours_model, args.batch, mean_slots, args.new_tokens - 1)
        run_kv_floor_in_order = kv_floor(
            ours_model, args.batch, mean_slots, args.new_tokens - 1, in_order=True
        )
        modes = {}
        for decoding in decodings:
            start = time.perf_counter()
            run_ours(decoding)
            compile_s = time.perf_counter() - start
            run_ours(decoding, one_token=True)
            run_hf(decoding, 8)
            run_read_attention(decoding)
            run_read_attention(decoding, one_token=True)
            seconds, results = interleaved(
                {
                    "ours": lambda d=decoding: run_ours(d),
                    "transformers": lambda d=decoding: run_hf(d),
                    "ours_one_token": lambda d=decoding: run_ours(d, one_token=True),
                    "transformers_one_token": lambda d=decoding: run_hf(d, 1),
                    "floor": run_floor,
                    "kv_floor": run_kv_floor,
                    "kv_floor_in_order": run_kv_floor_in_order,
                    "read_attention": lambda d=decoding: run_read_attention(d),
                    "read_attention_one_token": lambda d=decoding: run_read_attention(
                        d, one_token=True
                    ),
                },
                args.repeats,
            )
            ours_s, theirs_s = seconds["ours"], seconds["transformers"]
            ours = step_and_floor_ms({"full": ours_s, "one": seconds["ours_one_token"],
                                      "floor": seconds["floor"]}, args.new_tokens)
            ours_step, floor_ms = ours["median"]["step_ms"], ours["median"]["floor_ms"]
            against_kv = step_and_floor_ms({"full": ours_s, "one": seconds["ours_one_token"],
                                            "floor": seconds["kv_floor"]}, args.new_tokens)
            kv_ms = against_kv["median"]["floor_ms"]
            read_attention = step_and_floor_ms(
                {"full": seconds["read_attention"], "one": seconds["read_attention_one_token"],
                 "floor": seconds["floor"]}, args.new_tokens)
            theirs_step = per_step_ms(theirs_s, seconds["transformers_one_token"], args.new_tokens)
            modes[decoding] = {
                "ours": {**summary(ours_s, generated), "compile_s": round(compile_s, 3)},
                "transformers": summary(theirs_s, generated),
                "speedup_median": statistics.median(theirs_s) / statistics.median(ours_s),
                "speedup_best": min(theirs_s) / min(ours_s),
                "decode_step": {
                    "ours_ms_per_step": round(ours_step, 3),
                    "transformers_ms_per_step": round(theirs_step, 3),
                    "matmul_floor_ms": round(floor_ms, 3),
                    "ours_over_floor": round(ours_step / floor_ms, 2),
                    "ours_over_floor_paired": ours["paired"]["over_floor"],
                    "best": ours["best"],  # min of each side's runs in place of the median
                    "mean_cache_slots": mean_slots,
                    "kv_floor_ms": round(kv_ms, 3),
                    "ours_over_kv_floor": round(ours_step / kv_ms, 2),
                    "kv_floor_over_matmul_floor": round(kv_ms / floor_ms, 2),
                    "kv_floor_in_order_over_matmul_floor": round(
                        statistics.median(seconds["kv_floor_in_order"])
                        / statistics.median(seconds["floor"]), 2),
                    "attention_as_read": {
                        "ms_per_step": read_attention["median"]["step_ms"],
                        "over_floor": read_attention["median"]["over_floor"],
                        "over_floor_paired": read_attention["paired"]["over_floor"],
                    },
                    "transformers_over_ours": round(theirs_step / ours_step, 2),
                },
            }
            if decoding == "greedy":
                agreement = leading_agreement(results["ours"], results["transformers"])
                modes[decoding]["greedy_agreement"] = agreement

        scaling = []
        scaling_lengths = [args.prompt_len] + [int(x) for x in args.scaling_prompts.split(",") if x]
        for prompt_len in scaling_lengths:
            rows = rng.integers(5, config.vocab_size, size=(args.batch, prompt_len))
            new_tokens = args.scaling_new_tokens
            for one_token in (False, True):
                run_ours("greedy", one_token, new_tokens, rows)
            limits = LoopSettings(Greedy(), new_tokens, cache_segments=segments).segment_limits()
            mean_slots = prompt_len + round(statistics.mean(limits))
            seconds, _ = interleaved(
                {
                    "full": lambda r=rows, n=new_tokens: run_ours("greedy", False, n, r),
                    "one": lambda r=rows, n=new_tokens: run_ours("greedy", True, n, r),
                    "floor": kv_floor(ours_model, args.batch, mean_slots, new_tokens - 1),
                },
                args.repeats,
            )
            measured = step_and_floor_ms(seconds, new_tokens)
            step_ms, kv_ms = measured["median"]["step_ms"], measured["median"]["floor_ms"]
            scaling.append(
                {
                    "prompt_len": prompt_len,
                    "new_tokens": new_tokens,
                    "cache_slots": prompt_len + new_tokens,
                    "mean_cache_slots": mean_slots,
                    "kv_cache_mb": round(
                        kv_cache_mb(config, args.batch, prompt_len + new_tokens), 1
                    ),
                    "ours_ms_per_step": round(step_ms, 3),
                    "over_matmul_floor": round(step_ms / floor_ms, 2),
                    "kv_floor_ms": round(kv_ms, 3),
                    "over_kv_floor": round(step_ms / kv_ms, 2),
                    "over_kv_floor_paired": measured["paired"]["over_floor"],
                    "best": measured["best"],
                    "target_over_kv_floor": 1.5,
                }
            )

        batch64 = None
        if args.batch64_tokens:
            wide = rng.integers(5, config.vocab_size, size=(64, args.prompt_len))
            n = args.batch64_tokens

            def hf_wide():
                ids = torch.from_numpy(wide)
                with torch.inference_mode():
                    hf_model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                                      min_new_tokens=n, do_sample=False)

            run_ours("greedy", False, n, wide)
            hf_wide()
            seconds, _ = interleaved(
                {"ours": lambda: run_ours("greedy", False, n, wide), "transformers": hf_wide},
                max(2, args.repeats // 2),
            )
            batch64 = {
                "batch": 64,
                "new_tokens": n,
                "ours": summary(seconds["ours"], 64 * n),
                "transformers": summary(seconds["transformers"], 64 * n),
                "speedup_median": statistics.median(seconds["transformers"])
                / statistics.median(seconds["ours"]),
            }

    rollout = rollout_workload(args.rollout_slots, args.rollout_repeats) if args.rollout else None

    result = {
        "benchmark": "sampler",
        "config": str(
            config_path.relative_to(ROOT) if config_path.is_relative_to(ROOT) else config_path
        ),
        "params": config.num_params,
        "dtype": "float32",
        "batch": args.batch,
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        "repeats": args.repeats,
        "target_over_matmul_floor": 1.3,
        "weights_mb": round(config.num_params * 4 / 1e6, 1),
        "cache_segments": getattr(
            inspect.signature(generate).parameters.get("cache_segments"), "default", None
        ),
        "modes": modes,
        "scaling": scaling,
        "batch64": batch64,
        "rollout": rollout,
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_avg_1m_at_end": round(os.getloadavg()[0], 2),
            "torch_threads": torch.get_num_threads(),
            "python": sys.version.split()[0],
            "jax": jax.__version__,
            "jax_backend": jax.default_backend(),
            "torch": torch.__version__,
            "transformers": transformers.__version__,
        },
    }
    print(json.dumps(result, indent=2))
    if args.plot is not None:
        write_plot(result, args.plot)
    return 0


SFT_FOLDER = ROOT / "jaxopt_rl" / "demo" / "assets" / "sft_tiny"
SFT_PROBLEMS = ["mini-001", "mini-002", "mini-012", "mini-014", "mini-016", "mini-019",
                "mini-020", "mini-030"]  # configs/sft/tiny_mini.yaml


def rollout_workload(slots: int, repeats: int, group_size: int = 16, budget: int = 512) -> dict:
    """Useful tokens/s of the three samplers on the demo's SFT rollouts (module docstring)."""
    import numpy as np

    from jaxopt_rl.data import load_mini
    from jaxopt_rl.model import load_pretrained
    from jaxopt_rl.model.prompt import PromptTemplate, problem_prompt
    from jaxopt_rl.model.tokenizer import Tokenizer
    from jaxopt_rl.sampling import generate

    model = load_pretrained(SFT_FOLDER, dtype="float32")
    tokenizer = Tokenizer.default()
    dataset = load_mini()
    template = PromptTemplate(system="", instruction="Write a fast Python 3 program.",
                              problem_text="title")  # the demo's prompt (configs/demo.yaml)
    prompts = [tokenizer.encode(problem_prompt(dataset.record(p), template)) for p in SFT_PROBLEMS]
    knobs = dict(stop_tokens=tokenizer.eos_ids, seed=7, pad_id=tokenizer.pad_id,
                 prompt_multiple=32, group_size=group_size, slots=slots)
    runs = {
        scheme: functools.partial(generate, model, prompts, budget, 1.0, scheme=scheme, **knobs)
        for scheme in ("static", "compact", "slots")
    }
    compile_s = {}
    for name, fn in runs.items():
        start = time.perf_counter()
        fn()
        compile_s[name] = round(time.perf_counter() - start, 2)
    seconds, results = interleaved(runs, repeats)
    lengths = results["static"].lengths
    useful = int(lengths.sum())
    static_median = statistics.median(seconds["static"])
    out = {
        "model": str(SFT_FOLDER.relative_to(ROOT)),
        "prompts": len(prompts),
        "group_size": group_size,
        "max_new_tokens": budget,
        "slots": slots,
        "useful_tokens": useful,
        "completion_length": {"mean": round(float(lengths.mean()), 1), "min": int(lengths.min()),
                              "median": float(np.median(lengths)), "max": int(lengths.max()),
                              "cut_at_budget": int((~results["static"].finished).sum())},
        "target_speedup": 1.5,
    }
    for name in runs:
        median = statistics.median(seconds[name])
        out[name] = {
            "useful_tokens_per_s_median": round(useful / median, 1),
            "seconds_all": [round(x, 3) for x in seconds[name]],
            "first_call_s": compile_s[name],
            "speedup_vs_static": round(static_median / median, 2),
            "same_tokens": bool(np.array_equal(results[name].tokens, results["static"].tokens)),
        }
    return out


def write_plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    modes = list(result["modes"])
    fig, (ax, ax_scaling) = plt.subplots(1, 2, figsize=(11, 3.8))
    width = 0.38
    for offset, side in enumerate(["ours", "transformers"]):
        values = [result["modes"][mode][side]["tokens_per_s_median"] for mode in modes]
        xs = [i + (offset - 0.5) * width for i in range(len(modes))]
        label = "jaxopt-rl (jit while_loop)" if side == "ours" else "transformers generate"
        ax.bar(xs, values, width, color=["tab:blue", "tab:gray"][offset], label=label)
    ax.set_xticks(range(len(modes)))
    ax.set_xticklabels([f"{m}: {result['modes'][m]['speedup_median']:.1f}x" for m in modes])
    ax.set_ylabel("generated tokens / s (median)")
    ax.set_title(
        f"{result['config']} ({result['params'] / 1e6:.1f}M params), batch {result['batch']}, "
        f"prompt {result['prompt_len']}, {result['new_tokens']} new tokens, CPU float32",
        fontsize=9,
    )
    ax.legend(fontsize=8)
    points = result["scaling"]
    slots = [point["cache_slots"] for point in points]
    ax_scaling.plot(slots, [p["ours_ms_per_step"] for p in points], "o-", label="ours, greedy")
    floor = next(iter(result["modes"].values()))["decode_step"]["matmul_floor_ms"]
    ax_scaling.plot(slots, [p["kv_floor_ms"] for p in points], "s--", color="tab:orange",
                    label="weights + one read of the KV cache")
    ax_scaling.axhline(floor, color="tab:red", linestyle="--", label="weight matmuls only")
    ax_scaling.set_xlabel("KV cache slots at the end of the run (prompt + new tokens)")
    ax_scaling.set_ylabel("ms per decode step (median)")
    ax_scaling.set_ylim(bottom=0)
    ax_scaling.set_title("decode step vs cache length", fontsize=9)
    ax_scaling.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
