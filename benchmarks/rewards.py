"""Reward path cost: the jitted QP environment (signals + gates + collapsed reward) against one
jitted read of its inputs, same process, same arrays. Prints one JSON object.

    .venv/bin/python benchmarks/rewards.py                      # P = 64, 128, 256 x G = 16
    .venv/bin/python benchmarks/rewards.py --sizes 256 --repeats 50 --plot /tmp/rewards.png

Two paths, per size (P problems x G rollouts = B, T tests, H references):

  * `training`: what a training step pays. The references of the problem set are prepared once,
    outside the timed step (`reference_table.prepare_references`: sanitised, calibrated
    durations, their `[H, T, P]` copy, 1/n_ref and the QP ranks; its one-off cost is
    `prepare_ms`), and every step runs `rewards(batch, env, references=table)`.
      - `env_ms`: that step;
      - `read_ms`: a jitted sum over every input of the step, the RecordBatch AND the table
        (every byte the step is handed, read once), `ratio = env_ms / read_ms`
        (target <= 4 at P = 256);
      - `read_used_ms`, `ratio_used`: the same against only the inputs the step reads (the
        batch without its raw reference arrays, which the table replaces, plus the table):
        the stricter floor, reported beside it.
  * `cold`: `rewards(batch, env)` with no table: every call also prepares the table from the
    batch (sanitise, calibrate, rank the references against each other, O(P·T·H²)), then runs
    the same compiled step (so its `compile_s` is only what is left to compile). `env_ms`,
    `read_ms` (every RecordBatch input), `ratio`. Reported honestly; it has no target.

Also per size: `qp_kernel_ms`, the grouped QP kernel alone (environments that rank by QP) (`percentiles.qp_grouped` on the
prepared pool, the optimization tests), and `us_per_rollout = env_ms / B` of both paths:
scaling is linear when it stays flat across sizes (`per_rollout_us_spread`, max / min).

Timings are the best of `--repeats` calls per function, the functions interleaved round by round
(so a burst of load elsewhere hits all of them alike), after a warm-up call (compilation
reported apart as `compile_s`), with `block_until_ready`, inputs already on the device.

Inputs are synthetic but shaped like DMC-Optim (docs/design/dataset-eval.md §1): 16 T0 + 16 T+ + 96
TO tests, log-normal reference durations with ~5 % missing, ~70 % successful rollouts, timeouts
at the 10 s cap. The script holds ``/tmp/jaxopt-bench.lock`` (``flock``) while timing, so
benchmarks on a shared box do not overlap; do not wrap it in ``flock`` yourself.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from bench_lock import bench_lock

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from jaxopt_rl.rewards import records  # noqa: E402
from jaxopt_rl.rewards.env_config import load_env_config  # noqa: E402
from jaxopt_rl.rewards.environment import rewards  # noqa: E402
from jaxopt_rl.rewards.percentiles import qp_grouped  # noqa: E402
from jaxopt_rl.rewards.reference_table import prepare_references  # noqa: E402

CAP_S = 10.0


def make_batch(num_problems: int, group: int, num_tests: int, num_refs: int,
               seed: int = 0) -> records.RecordBatch:
    """A synthetic RecordBatch (NumPy, grouped layout) with DMC-Optim-like kinds and durations."""
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
        cap_BT=np.full((b, num_tests), CAP_S, np.float32), rollout_mask_B=np.ones(b, bool),
        ref_duration_PTH=ref_PTH, ref_mask_PTH=ref_mask_PTH,
    )


@jax.jit
def read_everything(tree) -> jax.Array:
    """Touch every input byte once: the floor of any kernel over these arrays."""
    return sum(jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree_util.tree_leaves(tree))


def used_inputs(batch: records.RecordBatch, table) -> tuple:
    """What the training step reads: the batch without the raw references, and the table."""
    rollouts = [getattr(batch, name) for name in ("status_BT", "duration_BT", "test_mask_BT",
                                                  "test_kind_BT", "io_chars_BT", "cap_BT",
                                                  "rollout_mask_B")]
    return rollouts, table


@jax.jit
def qp_kernel_only(batch: records.RecordBatch, table) -> jax.Array:
    """The grouped QP kernel by itself on the optimization tests of the prepared pool."""
    p, t = table.pool.key_PTH.shape[:2]
    opt_PT = (batch.test_mask_BT & (batch.test_kind_BT == records.TEST_KIND_CODE["TO"]))
    used_P1T = opt_PT.reshape(p, -1, t)[:, :1]
    return qp_grouped(batch.duration_BT.reshape(p, -1, t), table.pool, used_P1T)


def best_of(fns: dict, repeats: int, per_round: int = 2) -> dict[str, float]:
    """Best time of each function; functions interleaved round by round."""
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(max(1, repeats // per_round)):
        for name, fn in fns.items():
            for _ in range(per_round):
                start = time.perf_counter()
                jax.block_until_ready(fn())
                best[name] = min(best[name], time.perf_counter() - start)
    return best


def mib(tree) -> float:
    return round(sum(x.nbytes for x in jax.tree_util.tree_leaves(tree)) / 2**20, 2)


def measure(num_problems: int, args, env) -> dict:
    batch = jax.device_put(make_batch(num_problems, args.group, args.tests, args.refs))
    start = time.perf_counter()
    table = jax.block_until_ready(prepare_references(batch.ref_duration_PTH, batch.ref_mask_PTH,
                                                     env))
    prepare_compile_s = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(rewards(batch, env, references=table))
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    jax.block_until_ready(rewards(batch, env))
    cold_compile_s = time.perf_counter() - start
    used = used_inputs(batch, table)
    fns = {
        "training": lambda: rewards(batch, env, references=table),
        "training_read": lambda: read_everything((batch, table)),
        "training_read_used": lambda: read_everything(used),
        "cold": lambda: rewards(batch, env),
        "cold_read": lambda: read_everything(batch),
        "prepare": lambda: prepare_references(batch.ref_duration_PTH, batch.ref_mask_PTH, env),
    }
    if table.pool.rank_PTH is not None:  # the environment ranks by QP
        fns["qp_kernel"] = lambda: qp_kernel_only(batch, table)
    for fn in fns.values():
        jax.block_until_ready(fn())
    best = best_of(fns, args.repeats)
    b = num_problems * args.group

    def ms(name):
        return round(best[name] * 1e3, 3)

    return {
        "P": num_problems, "G": args.group, "B": b, "T": args.tests, "H": args.refs,
        "batch_MiB": mib(batch), "table_MiB": mib(table),
        "training": {
            "env_ms": ms("training"), "read_ms": ms("training_read"),
            "ratio": round(best["training"] / best["training_read"], 2),
            "read_used_ms": ms("training_read_used"),
            "ratio_used": round(best["training"] / best["training_read_used"], 2),
            "us_per_rollout": round(best["training"] * 1e6 / b, 3),
            "compile_s": round(compile_s, 3),
        },
        "cold": {
            "env_ms": ms("cold"), "read_ms": ms("cold_read"),
            "ratio": round(best["cold"] / best["cold_read"], 2),
            "us_per_rollout": round(best["cold"] * 1e6 / b, 3),
            "compile_s": round(cold_compile_s, 3),
        },
        "prepare_ms": ms("prepare"), "prepare_compile_s": round(prepare_compile_s, 3),
        "qp_kernel_ms": ms("qp_kernel") if "qp_kernel" in best else None,
    }


def plot(path: Path, results: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.8))
    b = [r["B"] for r in results]
    ax.plot(b, [r["training"]["env_ms"] for r in results], "o-", label="QP env, prepared refs")
    ax.plot(b, [r["cold"]["env_ms"] for r in results], "^-", label="QP env, cold")
    ax.plot(b, [r["training"]["read_ms"] for r in results], "s--",
            label="read of batch + table")
    ax.plot(b, [r["cold"]["read_ms"] for r in results], "d--", label="read of batch")
    ax.set(xscale="log", yscale="log", xlabel="rollouts B", ylabel="best time (ms)",
           title="reward path vs input read")
    ax.legend(fontsize="small")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _spread(results: list[dict], path: str) -> float:
    values = [r[path]["us_per_rollout"] for r in results]
    return round(max(values) / min(values), 2)


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
    with bench_lock(args.lock):
        for num_problems in sizes:
            print(f"[rewards benchmark] P={num_problems} G={args.group} T={args.tests} "
                  f"H={args.refs} ...", file=sys.stderr, flush=True)
            results.append(measure(num_problems, args, env))
    largest = max(results, key=lambda r: r["B"])
    report = {
        "benchmark": "rewards", "env": env.name, "target_ratio": args.target_ratio,
        "training_ratio_at_largest": largest["training"]["ratio"],
        "meets_target": largest["training"]["ratio"] <= args.target_ratio,
        "training_ratio_used_at_largest": largest["training"]["ratio_used"],
        "cold_ratio_at_largest": largest["cold"]["ratio"],
        "per_rollout_us_spread": {"training": _spread(results, "training"),
                                  "cold": _spread(results, "cold")},
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
