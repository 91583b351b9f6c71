"""Async against sync on the same work, with a rollout mesh of its own: wall time and the
overlap the loop achieved. Measured, not projected.

    .venv/bin/python benchmarks/async_overlap.py                  # one process, 8 steps a mode
    .venv/bin/python benchmarks/async_overlap.py --processes 2    # two jax.distributed processes
    .venv/bin/python benchmarks/async_overlap.py --steps 12 --out /tmp/overlap

One process: a fresh `jaxopt-rl train` on 2 CPU devices (`mesh.rollout_devices=1`: the train
step on device 0, the sampler on device 1). Two processes (`--processes 2`): two `jaxopt-rl
train` processes joined by `jax.distributed` on localhost, 4 CPU devices each, the rollout mesh
on the second process's devices (`mesh.rollout_devices=4`, `mesh.rollout_layout=processes`; the
fixed schedule of `training.scheduled_source`). Either way `configs/train/tiny_qp_p30.yaml` from
the shipped SFT checkpoint against the embedded sandbox: identical steps, prompts, G, seed and
meshes (two processes: 16 packed rows, which split over 4 training devices); only
`loop.mode` differs. Prints one JSON object per mode and their ratio, from the
runs' own metrics, leaving out step 1 (compilation):

  * `wall_s`: the sum of `time/wall_s` over steps 2..N;
  * `overlap`: busy phases (sample + execute + score + train) over that wall time (> 1: the
    rollout phases ran while the trainer stepped);
  * `idle_train_share`: the share of wall time the trainer waited for rollouts
    (`time/wait_rollouts_s`); `weight_sync_share`: the share spent in the weight copy, which
    is the first call that waits for the dispatched step to finish (so it holds most of the
    step's compute; the copy alone of the tiny model's 16 MB across two processes: ~0.3 s).

On 2 cores the sandbox's programs, the sampler and the train step share the same two cores, so
the ratio here bounds what the overlap can give, it does not predict a pod's.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_mode(mode: str, steps: int, out: Path, processes: int = 1) -> dict:
    overrides = [f"steps={steps}", f"output_dir={out}", f"loop.mode={mode}",
                 "checkpoint.every=1000", "checkpoint.async_save=false", "loop.workers=1",
                 "loop.queue_size=6"]
    command = [sys.executable, "-m", "jaxopt_rl.cli", "train", "--config",
               "configs/train/tiny_qp_p30.yaml", *overrides]
    if processes == 1:
        env = dict(os.environ, JAX_PLATFORMS="cpu",
                   XLA_FLAGS="--xla_force_host_platform_device_count=2")
        runs = [subprocess.Popen([*command, "mesh.rollout_devices=1"], cwd=ROOT, env=env,
                                 stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)]
    else:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        runs = []
        for index in range(processes):
            env = dict(os.environ, JAX_PLATFORMS="cpu",
                       XLA_FLAGS="--xla_force_host_platform_device_count=4",
                       JAXOPT_COORDINATOR_ADDRESS=f"127.0.0.1:{port}",
                       JAXOPT_NUM_PROCESSES=str(processes), JAXOPT_PROCESS_ID=str(index))
            runs.append(subprocess.Popen(
                # 16 packed rows: the tiny config's 14 do not split over 4 training devices
                [*command, f"mesh.rollout_devices={2 * processes}",
                 "mesh.rollout_layout=processes", "grpo.rows=16"], cwd=ROOT, env=env,
                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True))
    for index, run in enumerate(runs):
        _, stderr = run.communicate(timeout=3600)
        if run.returncode:
            raise SystemExit(f"{mode} run (process {index}) failed:\n{stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    later = [r for r in rows if r["step"] > 1]
    wall = sum(r["time/wall_s"] for r in later)
    busy = sum(r[f"time/{p}_s"] for r in later for p in ("sample", "execute", "score", "train"))
    waited = sum(r["time/wait_rollouts_s"] for r in later)
    synced = sum(r["time/weight_sync_s"] for r in later)
    return {"mode": mode, "processes": processes, "steps_timed": len(later),
            "wall_s": round(wall, 2), "overlap": round(busy / wall, 3),
            "idle_train_share": round(waited / wall, 3),
            "weight_sync_share": round(synced / wall, 3),
            "staleness_max": max(r.get("queue/staleness_max", 0) for r in rows)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument("--processes", type=int, default=1, choices=(1, 2))
    args = parser.parse_args()
    root = args.out or Path(tempfile.mkdtemp(prefix="overlap_"))
    results = {mode: run_mode(mode, args.steps, root / mode, args.processes)
               for mode in ("sync", "async")}
    for result in results.values():
        print(json.dumps(result))
    print(json.dumps({"async_over_sync_wall": round(
        results["async"]["wall_s"] / results["sync"]["wall_s"], 3), "measured": True}))


if __name__ == "__main__":
    main()
