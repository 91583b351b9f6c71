"""A long tiny GRPO run: resident memory stays flat and nothing recompiles after the start.

    .venv/bin/python benchmarks/train_memory.py                 # 200 steps
    .venv/bin/python benchmarks/train_memory.py --steps 60 --out /tmp/mem

Runs `configs/train/tiny_qp_p30.yaml` in sync mode with small shapes (16 new tokens, G = 2,
2 rows of 640) against `sandbox_cluster.testing.HashSandbox` (verdicts from a hash of the
program text, so groups carry a signal without a trained model), on one CPU device, and reads
the run's own metrics: `memory/rss_mb` (this process's resident memory) and `compiles/total`
(XLA compilations so far, JAX's compile event). Prints one JSON object:

  * `rss_growth` = (median RSS of the last 20 steps) / (median RSS of steps 11-30) - 1
    (target: within 10 %), and `rss_trend_mb_per_100_steps`, the least-squares slope of RSS
    from step 20 on (a leak shows as a steady positive slope). Medians, not the readings at
    step 20 and at the end: one step's reading swings by up to ~30 % from the next (whether
    the allocator has handed the step's transient buffers back yet), so two point readings
    measure that swing rather than growth. The point readings are printed too
    (`rss_mb_at_20`, `rss_mb_at_end`, `rss_growth_point`);
  * `compiles_at_20`, `compiles_at_end`, `new_compiles_after_20` (target: 0);
  * `seconds_per_step` (median over the run).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=1"
os.environ.setdefault("JAX_PLATFORMS", "cpu")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SMALL = ["init_from=null", "data.problems=[mini-012, mini-018]", "data.tests=[]",
         "rollout.references=stored", "env=standard_rlvr", "loop.mode=sync", "rollout.max_new_tokens=16",
         "rollout.group_size=2", "rollout.prompts_per_call=1", "loop.prompts_per_step=1",
         "loop.max_groups_per_step=40", "grpo.rows=2", "grpo.horizon=640",
         "checkpoint.every=50", "checkpoint.keep=1", "checkpoint.async_save=false"]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if args.steps <= 20:
        parser.error("--steps must be > 20 (step 20 is the reference point)")
    import numpy as np

    import jaxopt_rl.rollouts.worker as worker
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.loop import train
    from jaxopt_rl.training.metrics import read_metrics
    from sandbox_cluster.testing import HashSandbox

    worker.extract_program = lambda text: text or "pass"  # every completion is a program
    out = args.out or Path(tempfile.mkdtemp(prefix="train-memory-"))
    config = load_train_config(ROOT / "configs/train/tiny_qp_p30.yaml",
                               [f"output_dir={out}", f"steps={args.steps}", *SMALL])
    train(config, sandbox=HashSandbox(), log=lambda message: None)
    rows = {row["step"]: row for row in read_metrics(out)}
    first, last = rows[20], rows[args.steps]
    walls = [rows[s]["time/wall_s"] for s in sorted(rows)]
    steps = np.array(sorted(rows))
    rss = np.array([rows[s]["memory/rss_mb"] for s in steps])
    early = float(np.median(rss[(steps >= 11) & (steps <= 30)]))
    late = float(np.median(rss[steps > args.steps - 20]))
    after = steps >= 20
    slope = float(np.polyfit(steps[after], rss[after], 1)[0]) if after.sum() > 1 else 0.0
    print(json.dumps({
        "steps": args.steps,
        "rss_mb_median_steps_11_30": round(early, 1),
        "rss_mb_median_last_20": round(late, 1),
        "rss_growth": round(late / early - 1, 4),
        "rss_trend_mb_per_100_steps": round(100 * slope, 1),
        "rss_mb_min_max_after_20": [round(float(rss[after].min()), 1),
                                    round(float(rss[after].max()), 1)],
        "rss_mb_at_20": round(first["memory/rss_mb"], 1),
        "rss_mb_at_end": round(last["memory/rss_mb"], 1),
        "rss_growth_point": round(last["memory/rss_mb"] / first["memory/rss_mb"] - 1, 4),
        "compiles_at_20": int(first["compiles/total"]),
        "compiles_at_end": int(last["compiles/total"]),
        "new_compiles_after_20": int(last["compiles/total"] - first["compiles/total"]),
        "seconds_per_step": round(float(np.median(walls)), 3),
        "out": str(out),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
