"""Reward path cost: the jitted QP environment (signals + gates + collapsed reward) against one
jitted read of the same inputs, same process, same arrays. Prints one JSON object.

    .venv/bin/python benchmarks/rewards.py                      # P = 64, 128, 256 x G = 16
    .venv/bin/python benchmarks/rewards.py --sizes 256 --repeats 50 --plot /tmp/rewards.png

What is measured, per size (P problems x G rollouts = B, T tests, H references):
  * `env_ms`:  `jaxopt_rl.rewards.rewards(batch, env)` with env `--env` (default `qp_p30`:
    sanitise references, used tests, QP against `[P, T, H]` references through the per-problem
    kernels, gates, collapsed binary reward) — the training-time path;
  * `read_ms`: a jitted sum over every input array of the same RecordBatch (every byte the
    environment must look at, read once) — the floor any kernel pays;
  * `ratio = env_ms / read_ms` (target <= 4 at P = 256, G = 16, T = 128, H = 64);
  * `qp_kernel_ms`: `percentiles.qp_by_problem` alone on the same inputs, to show how much of
    `env_ms` is the ranking kernel and how much the environment around it.
Both are the best of `--repeats` calls after a warm-up call (compilation reported apart as
`compile_s`), with `block_until_ready`, inputs already on the device. Scaling is linear when
`env_ms / B` stays flat across sizes (`env_us_per_rollout`).

Inputs are synthetic but shaped like DMC-Optim (spec dataset-eval.md §1): 16 T0 + 16 T+ + 96 TO
tests, log-normal reference durations with ~5 % missing, ~70 % successful rollouts, timeouts
at the 10 s cap. The script holds ``/tmp/jaxopt-bench.lock`` (``flock``) while timing, so
benchmarks on a shared box do not overlap; do not wrap it in ``flock`` yourself.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxopt_rl.rewards import records  # noqa: E402
from jaxopt_rl.rewards.env_config import load_env_config  # noqa: E402
from jaxopt_rl.rewards.environment import rewards  # noqa: E402
from jaxopt_rl.rewards.percentiles import qp_by_problem  # noqa: E402

CAP_S = 10.0


@contextlib.contextmanager
def bench_lock(path: str | None):
    if path is None:
        yield
        return
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def make_batch(num_problems: int, group: int, num_tests: int, num_refs: int,
               seed: int = 0) -> records.RecordBatch:
    """A synthetic RecordBatch (NumPy) with DMC-Optim-like kinds, durations and statuses."""
    rng = np.random.default_rng(seed)
    b = num_problems * group
    n_cor = num_tests // 4
    kind_T = np.array([0] * (n_cor // 2) + [1] * (n_cor - n_cor // 2) + [2] * (num_tests - n_cor),
                      np.int8)
    work_PT = np.exp(rng.normal(-2.3, 1.0, (num_problems, num_tests)))
    speed_PH = np.exp(rng.normal(0, 0.4, (num_problems, 1, num_refs)))
    ref_PTH = np.minimum(CAP_S, work_PT[..., None] * speed_PH).astype(np.float32)
    ref_mask_PTH = rng.uniform(size=ref_PTH.shape) > 0.05
    index_B = np.repeat(np.arange(num_problems, dtype=np.int32), group)
    speed_B = np.exp(rng.normal(0.2, 0.5, b))
    duration_BT = np.minimum(CAP_S, work_PT[index_B] * speed_B[:, None]).astype(np.float32)
    status_BT = np.where(rng.uniform(size=(b, num_tests)) < 0.995, records.SUCCESS,
                         records.FAILURE).astype(np.int8)
    status_BT[duration_BT >= CAP_S] = records.TIMEOUT
    return records.RecordBatch(
        status_BT=status_BT, duration_BT=duration_BT,
        test_mask_BT=np.ones((b, num_tests), bool), test_kind_BT=np.tile(kind_T, (b, 1)),
        io_chars_BT=np.full((b, num_tests), 1000, np.int32),
        cap_BT=np.full((b, num_tests), CAP_S, np.float32), problem_index_B=index_B,
        ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask_PTH,
    )


@jax.jit
def read_everything(batch: records.RecordBatch) -> jax.Array:
    """Touch every input byte once: the floor of any kernel over these arrays."""
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree_util.tree_leaves(batch))


@jax.jit
def qp_kernel_only(batch: records.RecordBatch) -> jax.Array:
    """The QP kernel by itself on the optimization tests: how much of `env_ms` is ranking."""
    used_BT = batch.test_mask_BT & (batch.test_kind_BT == records.TEST_KIND_CODE["TO"])
    return qp_by_problem(batch.duration_BT, batch.ref_duration_PTH, batch.ref_mask_PTH,
                         batch.problem_index_B, used_BT)


def best_of(fn, repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(fn())
        times.append(time.perf_counter() - start)
    return min(times)


def measure(num_problems: int, args, env) -> dict:
    batch = jax.device_put(make_batch(num_problems, args.group, args.tests, args.refs))
    start = time.perf_counter()
    jax.block_until_ready(rewards(batch, env))
    compile_s = time.perf_counter() - start
    jax.block_until_ready(read_everything(batch))
    jax.block_until_ready(qp_kernel_only(batch))
    env_s = best_of(lambda: rewards(batch, env), args.repeats)
    read_s = best_of(lambda: read_everything(batch), args.repeats)
    qp_s = best_of(lambda: qp_kernel_only(batch), args.repeats)
    num_rollouts = num_problems * args.group
    input_mb = sum(x.nbytes for x in jax.tree_util.tree_leaves(batch)) / 2**20
    return {"P": num_problems, "G": args.group, "B": num_rollouts, "T": args.tests, "H": args.refs,
            "input_MiB": round(input_mb, 2), "compile_s": round(compile_s, 3),
            "env_ms": round(env_s * 1e3, 3), "read_ms": round(read_s * 1e3, 3),
            "ratio": round(env_s / read_s, 2), "qp_kernel_ms": round(qp_s * 1e3, 3),
            "env_us_per_rollout": round(env_s * 1e6 / num_rollouts, 3)}


def plot(path: Path, results: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.5))
    b = [r["B"] for r in results]
    ax.plot(b, [r["env_ms"] for r in results], "o-", label="QP environment (rewards)")
    ax.plot(b, [r["read_ms"] for r in results], "s--", label="jitted read of the inputs")
    ax.set(xscale="log", yscale="log", xlabel="rollouts B", ylabel="best time (ms)",
           title="reward path vs input read")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="64,128,256", help="problem counts P, comma-separated")
    parser.add_argument("--group", type=int, default=16, help="rollouts per problem G")
    parser.add_argument("--tests", type=int, default=128)
    parser.add_argument("--refs", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--env", default="qp_p30")
    parser.add_argument("--target-ratio", type=float, default=4.0)
    parser.add_argument("--lock", default="/tmp/jaxopt-bench.lock",
                        help="flock file held while timing ('' to skip)")
    parser.add_argument("--plot", type=Path, help="write a PNG of time against B")
    args = parser.parse_args(argv)
    env = load_env_config(args.env)
    sizes = [int(s) for s in args.sizes.split(",")]
    results = []
    with bench_lock(args.lock or None):
        for num_problems in sizes:
            print(f"[rewards benchmark] P={num_problems} G={args.group} T={args.tests} "
                  f"H={args.refs} ...", file=sys.stderr, flush=True)
            results.append(measure(num_problems, args, env))
    largest = max(results, key=lambda r: r["B"])
    report = {
        "benchmark": "rewards", "env": env.name, "target_ratio": args.target_ratio,
        "ratio_at_largest": largest["ratio"], "meets_target": largest["ratio"] <= args.target_ratio,
        "per_rollout_us_spread": round(max(r["env_us_per_rollout"] for r in results)
                                       / min(r["env_us_per_rollout"] for r in results), 2),
        "sizes": results,
        "machine": {"jax": jax.__version__, "backend": jax.default_backend(),
                    "device": str(jax.devices()[0]), "cpu_count": os.cpu_count(),
                    "load_avg_1m": round(os.getloadavg()[0], 2), "python": platform.python_version()},
        "repeats": args.repeats,
    }
    if args.plot:
        plot(args.plot, results)
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
