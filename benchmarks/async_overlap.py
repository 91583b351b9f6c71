"""Async against sync on the same work, one process with a rollout mesh of its own (the
single-process case): wall time and the overlap the loop achieved. Measured, not projected.

    .venv/bin/python benchmarks/async_overlap.py                 # 8 steps per mode
    .venv/bin/python benchmarks/async_overlap.py --steps 12 --out /tmp/overlap

Each mode is a fresh `jaxopt-rl train` process on 2 CPU devices (`mesh.rollout_devices=1`: the
train step on device 0, the sampler on device 1) of `configs/train/tiny_qp_p30.yaml` from the
shipped SFT checkpoint against the embedded sandbox: identical steps, prompts, G and seed; only
`loop.mode` differs. Prints one JSON object per mode and their ratio, from the runs' own
metrics, leaving out step 1 (compilation):

  * `wall_s`: the sum of `time/wall_s` over steps 2..N;
  * `overlap`: busy phases (sample + execute + score + train) over that wall time (> 1: the
    rollout phases ran while the trainer stepped);
  * `idle_train_share`: the share of wall time the trainer waited for rollouts
    (`time/wait_rollouts_s`), where the remaining idle time is.

On 2 cores the sandbox's programs, the sampler and the train step share the same two cores, so
the ratio here bounds what the overlap can give, it does not predict a pod's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_mode(mode: str, steps: int, out: Path) -> dict:
    env = dict(os.environ, JAX_PLATFORMS="cpu",
               XLA_FLAGS="--xla_force_host_platform_device_count=2")
    overrides = [f"steps={steps}", f"output_dir={out}", f"loop.mode={mode}",
                 "mesh.rollout_devices=1", "checkpoint.every=1000", "checkpoint.async_save=false",
                 "loop.workers=1", "loop.queue_size=6"]
    done = subprocess.run([sys.executable, "-m", "jaxopt_rl.cli", "train", "--config",
                           "configs/train/tiny_qp_p30.yaml", *overrides], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=3600)
    if done.returncode:
        raise SystemExit(f"{mode} run failed:\n{done.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    later = [r for r in rows if r["step"] > 1]
    wall = sum(r["time/wall_s"] for r in later)
    busy = sum(r[f"time/{p}_s"] for r in later for p in ("sample", "execute", "score", "train"))
    waited = sum(r["time/wait_rollouts_s"] for r in later)
    return {"mode": mode, "steps_timed": len(later), "wall_s": round(wall, 2),
            "overlap": round(busy / wall, 3), "idle_train_share": round(waited / wall, 3),
            "staleness_max": max(r.get("queue/staleness_max", 0) for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="overlap_"))
    results = {mode: run_mode(mode, args.steps, root / mode) for mode in ("sync", "async")}
    for result in results.values():
        print(json.dumps(result))
    print(json.dumps({"async_over_sync_wall": round(
        results["async"]["wall_s"] / results["sync"]["wall_s"], 3), "measured": True}))


if __name__ == "__main__":
    main()
