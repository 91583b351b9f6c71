"""Offline simulator throughput: environment configurations per second on DMC-Optim-mini.

    JAX_PLATFORMS=cpu taskset -c 0,1 python benchmarks/simulator.py [--sizes 10 100 1000 10000]

Target: >= 1,000 environment configurations in <= 60 s on 2 CPU cores, compilation
included. The configurations are a mix of five structures, drawn at random (seeded) from the
paper's parameter grids (Table 38): absolute filter x absolute limit x tolerance, ranked-worst
percentile x tolerance, relative limit x tolerance, QP threshold, QAR threshold. For each size
the jit caches are cleared first, so `cold_s` includes compiling every structure; `warm_s` is
a second run of the same configurations (the compiled programs reused). Loading the stored
runs and their quality scores (`setup_s`) is paid once per process and reported apart.

Prints one JSON object: per size, cold and warm seconds, configurations per second, and the
growth ratio against the previous size; the machine's load average at start and end (the
machine may be shared: compare ratios in one run, not absolute times across machines).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench_lock import DEFAULT_LOCK, bench_lock

LIMITS_S = (0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0)
PERCENTS = (10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0)
TOLERANCES = (0.0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 0.9)
THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)


def configurations(count: int, seed: int = 0) -> list:
    """`count` environments, five structures in turn, numbers drawn from the paper's grids."""
    import dataclasses

    from jaxopt_rl.rewards.env_config import load_env_config

    rng = np.random.default_rng(seed)
    kinds = ("abs_2s", "rw_p80", "rel_timeout_p50", "qp_p30", "qar_p30")
    base = {name: load_env_config(name) for name in kinds}
    pick = lambda values: float(values[rng.integers(len(values))])  # noqa: E731
    envs = []
    for i in range(count):
        env = base[kinds[i % 5]]
        if env.filter.kind == "abs":
            env = dataclasses.replace(
                env, filter=dataclasses.replace(env.filter, threshold_s=pick(LIMITS_S)),
                limit=dataclasses.replace(env.limit, limit_s=pick(LIMITS_S)))
        elif env.limit.kind in ("ranked", "relative"):
            env = dataclasses.replace(
                env, limit=dataclasses.replace(env.limit, percentile=pick(PERCENTS)))
        if env.ranking.kind == "none":
            gates = dataclasses.replace(env.gates, timeout_tolerance=pick(TOLERANCES))
        else:
            gates = dataclasses.replace(env.gates, quality_threshold=pick(THRESHOLDS))
        envs.append(dataclasses.replace(env, gates=gates, name=f"{kinds[i % 5]}_{i}"))
    return envs


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000, 10000])
    parser.add_argument("--lock", default=DEFAULT_LOCK, help="benchmark lock ('' for none)")
    args = parser.parse_args(argv)
    with bench_lock(args.lock):
        import jax

        from jaxopt_rl.data.mini import load_mini
        from jaxopt_rl.simulator import Simulator, load_stored_runs

        load_start = os.getloadavg()
        start = time.perf_counter()
        simulator = Simulator(load_stored_runs(load_mini()))
        setup_s = time.perf_counter() - start
        sizes, previous = {}, None
        for size in args.sizes:
            envs = configurations(size)
            jax.clear_caches()
            start = time.perf_counter()
            result = simulator.run(envs)
            cold_s = time.perf_counter() - start
            start = time.perf_counter()
            simulator.run(envs)
            warm_s = time.perf_counter() - start
            entry = {"cold_s": round(cold_s, 3), "warm_s": round(warm_s, 3),
                     "configs_per_s_cold": round(size / cold_s, 1),
                     "configs_per_s_warm": round(size / warm_s, 1),
                     "structures": result.num_structures}
            if previous is not None:
                entry["cold_ratio_vs_previous"] = round(cold_s / sizes[previous]["cold_s"], 2)
                entry["warm_ratio_vs_previous"] = round(warm_s / sizes[previous]["warm_s"], 2)
            sizes[size], previous = entry, size
        runs = simulator.runs
        report = {
            "benchmark": "simulator",
            "dataset": "DMC-Optim-mini",
            "problems": runs.shape[0], "references": int(runs.reference_PH.sum()),
            "steps": simulator.bands.steps,
            "devices": [str(d) for d in jax.devices()],
            "cpu_affinity": sorted(os.sched_getaffinity(0)),
            "setup_s": round(setup_s, 3),
            "sizes": sizes,
            "target": "1000 configurations <= 60 s cold (setup included)",
            "target_met": (1000 in sizes and sizes[1000]["cold_s"] + setup_s <= 60.0),
            "load_avg_start": [round(x, 2) for x in load_start],
            "load_avg_end": [round(x, 2) for x in os.getloadavg()],
        }
    print(json.dumps(report, indent=2))
    return report


if __name__ == "__main__":
    main()
