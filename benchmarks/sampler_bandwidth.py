"""Decode bandwidth of the sampler on one accelerator: tokens/s and the fraction of the device's
memory bandwidth a decode step uses. Prints one JSON object.

    python benchmarks/sampler_bandwidth.py --model benchmarks/qwen2_0p5b.yaml --peak-gbs 4800
    python benchmarks/sampler_bandwidth.py --model configs/model/tiny.yaml   # CPU smoke

A random-weight model in bfloat16 (parameters and compute) samples `--new-tokens` tokens after
`--batch` random prompts of `--prompt-len` tokens, no EOS (every row runs to the end), greedy.
The decode step is ``(full run - one-token run) / (new_tokens - 1)`` (the prefill cancels, as in
`benchmarks/sampler.py`). A step must read every weight once and each row's KV cache at the
slots it attends over (prompt + mean segment limit), so ``bytes_per_step`` is their sum and
``bandwidth_fraction`` is ``bytes_per_step / step / peak``. Target on an H200 (4.8 TB/s),
~0.5B at batch 64: >= 0.5.
"""

from __future__ import annotations

import argparse
import inspect
import json
import statistics
import time
from pathlib import Path

import numpy as np


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", type=Path, required=True, help="a model YAML")
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--prompt-len", type=int, default=512)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--peak-gbs", type=float, default=None, help="device memory GB/s")
    args = parser.parse_args(argv)

    import dataclasses

    import jax

    from jaxopt_rl.config import load_config
    from jaxopt_rl.model import ModelConfig, init_model
    from jaxopt_rl.sampling import Greedy, generate
    from jaxopt_rl.sampling.loop import LoopSettings

    config = load_config(ModelConfig, args.model)
    config = dataclasses.replace(config, param_dtype="bfloat16", compute_dtype="bfloat16")
    model = init_model(config, seed=0)
    rng = np.random.default_rng(0)
    prompts = rng.integers(5, config.vocab_size, size=(args.batch, args.prompt_len)).tolist()
    every_token = list(range(config.vocab_size))

    def run(one_token: bool):
        batch = generate(model, prompts, args.new_tokens, 0.0,
                         stop_tokens=every_token if one_token else ())
        return batch.tokens

    for one_token in (False, True):
        run(one_token)
    full, one = [], []
    for _ in range(args.repeats):
        for sink, flag in ((full, False), (one, True)):
            start = time.perf_counter()
            run(flag)
            sink.append(time.perf_counter() - start)
    step_s = (statistics.median(full) - statistics.median(one)) / (args.new_tokens - 1)
    segments = inspect.signature(generate).parameters["cache_segments"].default
    limits = LoopSettings(Greedy(), args.new_tokens, cache_segments=segments).segment_limits()
    mean_slots = args.prompt_len + statistics.mean(limits)
    weight_bytes = config.num_params * 2
    kv_bytes = (2 * config.num_layers * args.batch * config.num_kv_heads * mean_slots
                * config.head_dim * 2)
    result = {
        "benchmark": "sampler_bandwidth",
        "model": str(args.model),
        "params": config.num_params,
        "dtype": "bfloat16",
        "batch": args.batch,
        "prompt_len": args.prompt_len,
        "new_tokens": args.new_tokens,
        "ms_per_step": round(step_s * 1e3, 3),
        "decode_tokens_per_s": round(args.batch / step_s, 1),
        "end_to_end_tokens_per_s": round(args.batch * args.new_tokens / statistics.median(full), 1),
        "weight_mb": round(weight_bytes / 1e6, 1),
        "kv_mb_per_step": round(kv_bytes / 1e6, 1),
        "bytes_per_step_gb": round((weight_bytes + kv_bytes) / 1e9, 4),
        "achieved_gbs": round((weight_bytes + kv_bytes) / step_s / 1e9, 1),
        "device": str(jax.devices()[0].device_kind),
        "backend": jax.default_backend(),
    }
    if args.peak_gbs:
        result["bandwidth_fraction"] = round(result["achieved_gbs"] / args.peak_gbs, 3)
        result["target_fraction"] = 0.5
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
