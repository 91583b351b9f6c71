"""Sampler throughput: our jitted `lax.while_loop` sampler vs `transformers` `generate`, same
weights, same machine, same process. Prints one JSON object.

    .venv/bin/python benchmarks/sampler.py                       # small config (~21M params)
    .venv/bin/python benchmarks/sampler.py --config tiny --repeats 5 --plot /tmp/sampler.png

What is measured: greedy decoding of `--new-tokens` tokens (no EOS, every row runs to the end)
after `--batch` random prompts of `--prompt-len` tokens, on CPU in float32. Ours is timed after
one warm-up call (compilation is reported separately as `compile_s`), `transformers` after one
short warm-up; each side reports the median of `--repeats` runs. A random-weight model is built
from ``configs/model/<config>.yaml``, written with our `save_pretrained`, and loaded by both
sides from that folder, so both run the same weights; `greedy_agreement` says how many leading
tokens the two greedy outputs share (float32 rounding may eventually flip an argmax).

The run holds ``/tmp/jaxopt-bench.lock`` (``flock``) so benchmarks on a shared box do not
overlap. Target: ``speedup >= 5`` at batch 8, prompt 64, 256 new tokens.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def bench_lock(path: str):
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def timed(fn, repeats: int) -> tuple[float, list[float], object]:
    seconds, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        seconds.append(time.perf_counter() - start)
    return statistics.median(seconds), seconds, result


def leading_agreement(ours: np.ndarray, theirs: np.ndarray) -> float:
    """Mean over rows of the fraction of tokens before the first disagreement."""
    fractions = []
    for a, b in zip(ours, theirs):
        differ = np.flatnonzero(a != b)
        fractions.append((differ[0] if differ.size else len(a)) / len(a))
    return float(np.mean(fractions))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--config", default="small", help="name in configs/model/ or a YAML path")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt-len", type=int, default=64)
    parser.add_argument("--new-tokens", type=int, default=256)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--lock", default="/tmp/jaxopt-bench.lock", help="flock file ('' for none)")
    parser.add_argument("--plot", type=Path, default=None, help="also write a PNG bar chart here")
    args = parser.parse_args(argv)

    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    import jax
    import torch
    import transformers

    from jaxopt_rl.config import load_config
    from jaxopt_rl.model import ModelConfig, init_model, load_pretrained, save_pretrained
    from jaxopt_rl.sampling import generate

    config_path = Path(args.config)
    if not config_path.suffix:
        config_path = ROOT / "configs" / "model" / f"{args.config}.yaml"
    config = load_config(ModelConfig, config_path)
    rng = np.random.default_rng(args.seed)
    prompts = rng.integers(5, config.vocab_size, size=(args.batch, args.prompt_len)).astype(
        np.int64
    )

    with (
        tempfile.TemporaryDirectory() as folder,
        bench_lock(args.lock) if args.lock else contextlib.nullcontext(),
    ):
        save_pretrained(init_model(config, seed=args.seed), folder)
        ours_model = load_pretrained(folder, dtype="float32")
        hf_model = transformers.AutoModelForCausalLM.from_pretrained(
            folder, dtype=torch.float32
        ).eval()
        hf_model.generation_config.eos_token_id = None
        hf_model.generation_config.pad_token_id = config.pad_token_id or 0

        def run_ours():
            return generate(
                ours_model, prompts.tolist(), args.new_tokens, temperature=0.0, seed=args.seed
            )

        def run_hf(new_tokens=args.new_tokens):
            with torch.inference_mode():
                ids = torch.from_numpy(prompts)
                out = hf_model.generate(
                    ids,
                    attention_mask=torch.ones_like(ids),
                    max_new_tokens=new_tokens,
                    min_new_tokens=new_tokens,
                    do_sample=False,
                )
            return out[:, args.prompt_len :].numpy()

        start = time.perf_counter()
        run_ours()
        compile_s = time.perf_counter() - start
        ours_s, ours_all, ours_batch = timed(run_ours, args.repeats)
        run_hf(8)
        hf_s, hf_all, hf_tokens = timed(run_hf, args.repeats)

    generated = args.batch * args.new_tokens
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
        "decoding": "greedy",
        "repeats": args.repeats,
        "ours": {
            "tokens_per_s": generated / ours_s,
            "seconds_median": ours_s,
            "seconds_all": ours_all,
            "compile_s": compile_s,
        },
        "transformers": {
            "tokens_per_s": generated / hf_s,
            "seconds_median": hf_s,
            "seconds_all": hf_all,
        },
        "speedup": hf_s / ours_s,
        "target_speedup": 5.0,
        "greedy_agreement": leading_agreement(ours_batch.tokens, hf_tokens),
        "machine": {
            "platform": platform.platform(),
            "cpu_count": os.cpu_count(),
            "load_avg_1m": os.getloadavg()[0],
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


def write_plot(result: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = ["jaxopt-rl (jit while_loop)", "transformers generate"]
    values = [result["ours"]["tokens_per_s"], result["transformers"]["tokens_per_s"]]
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.bar(names, values, color=["tab:blue", "tab:gray"])
    ax.set_ylabel("generated tokens / s")
    ax.set_title(
        f"{result['config']} ({result['params'] / 1e6:.1f}M params), batch {result['batch']}, "
        f"prompt {result['prompt_len']}, {result['new_tokens']} new: {result['speedup']:.1f}x",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


if __name__ == "__main__":
    raise SystemExit(main())
