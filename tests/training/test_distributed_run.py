"""A real two-process `jax.distributed` run on localhost: 2 processes x 4 CPU devices train 3
steps on one 8-device mesh, checkpoint, and a restart of both resumes at step 3."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARGS = ["env=standard_rlvr", "loop.mode=sync", "rollout.max_new_tokens=8",
        "rollout.group_size=2", "rollout.prompts_per_call=4", "loop.prompts_per_step=4",
        "loop.max_groups_per_step=40", "grpo.rows=8", "grpo.horizon=128", "mesh.fsdp=-1",
        "checkpoint.every=3", "checkpoint.async_save=false",
        "distributed.initialization_timeout_s=120"]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run_both(out: Path, *overrides: str) -> list[subprocess.CompletedProcess]:
    port = _free_port()
    processes = []
    for index in range(2):
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env.update(JAXOPT_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAXOPT_NUM_PROCESSES="2",
                   JAXOPT_PROCESS_ID=str(index))
        processes.append(subprocess.Popen(
            [sys.executable, str(ROOT / "tests/training/distributed_driver.py"), str(out),
             *ARGS, *overrides], cwd=ROOT, env=env, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True))
    results = []
    for process in processes:
        try:
            stdout, stderr = process.communicate(timeout=900)
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
        results.append(subprocess.CompletedProcess(process.args, process.returncode, stdout,
                                                   stderr))
    return results


@pytest.mark.slow
def test_two_processes_train_checkpoint_and_resume(tmp_path):
    out = tmp_path / "run"
    first = _run_both(out, "steps=3")
    for index, done in enumerate(first):
        assert done.returncode == 0, f"process {index}:\n{done.stderr[-4000:]}"
        assert f"process {index} of 2: 8 devices, done" in done.stdout
    assert (out / "checkpoints" / "3").is_dir()
    second = _run_both(out, "steps=4")
    for index, done in enumerate(second):
        assert done.returncode == 0, f"process {index}:\n{done.stderr[-4000:]}"
        # Gloo's "[Gloo] Rank 0 is connected to 1 peer ranks..." can arrive split across lines
        ours = [line for line in done.stdout.splitlines()
                if not line.startswith("[Gloo]") and "peer ranks" not in line]
        assert ours[0].startswith("resumed from step 3 of "), ours[:3]
    steps = [json.loads(line)["step"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert steps == [1, 2, 3, 4]  # process 0 alone writes the log; no step twice


@pytest.mark.slow
def test_async_across_processes_refuses_to_start_instead_of_hanging(tmp_path):
    """Issue 30: a two-process async run finished step 1 and hung (killed after 8 minutes);
    until the two-mesh schedule exists it stops at start-up naming the key, on every process."""
    for index, done in enumerate(_run_both(tmp_path / "run", "steps=2", "loop.mode=async")):
        assert done.returncode != 0, f"process {index} ran"
        assert "loop.mode: 'async' runs on one process only" in done.stderr
        assert "set loop.mode=sync" in done.stderr
