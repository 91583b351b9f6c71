"""Real two-process `jax.distributed` runs on localhost (2 processes x 4 CPU devices): sync on
one 8-device mesh, checkpoint and resume; async with a rollout mesh of its own in both layouts,
SIGKILLed and resumed without losing or repeating a prompt; a split the schedule cannot run,
refused at start-up."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from jaxopt_rl.training.checkpoints import Checkpointer
from jaxopt_rl.training.config import CheckpointConfig
from jaxopt_rl.training.cursor import DataCursor
from jaxopt_rl.training.metrics import read_groups, read_metrics

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
    processes = _start_both(out, *overrides, stderr=subprocess.PIPE)
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
def test_a_split_the_schedule_cannot_run_is_refused_at_start_up_on_every_process(tmp_path):
    """Async across processes with a rollout mesh smaller than the training mesh: the weight
    copy maps them shard for shard, so the run stops before step 1, naming the key (it used to
    finish step 1 and hang)."""
    runs = _run_both(tmp_path / "run", "steps=2", "loop.mode=async", "mesh.rollout_devices=2")
    for index, done in enumerate(runs):
        assert done.returncode != 0, f"process {index} ran"
        assert "mesh.rollout_devices: 2 of 8 devices" in done.stderr
        assert "set it to 4" in done.stderr


def _start_both(out: Path, *overrides: str, embedded: bool = False,
                stderr: int = subprocess.STDOUT) -> list[subprocess.Popen]:
    port = _free_port()
    processes = []
    for index in range(2):
        env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
        env.update(JAXOPT_COORDINATOR_ADDRESS=f"127.0.0.1:{port}", JAXOPT_NUM_PROCESSES="2",
                   JAXOPT_PROCESS_ID=str(index))
        processes.append(subprocess.Popen(
            [sys.executable, str(ROOT / "tests/training/distributed_driver.py"),
             *(["--embedded-sandbox"] if embedded else []), str(out), *ARGS, *overrides],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=stderr, text=True))
    return processes


def _finish(processes: list[subprocess.Popen], timeout: float = 600) -> list[str]:
    outputs = []
    for process in processes:
        try:
            outputs.append(process.communicate(timeout=timeout)[0])
        except subprocess.TimeoutExpired:
            for p in processes:
                p.kill()
            raise
    for index, (process, output) in enumerate(zip(processes, outputs)):
        assert process.returncode == 0, f"process {index}:\n{output[-4000:]}"
    return outputs


# The embedded sandbox runs the shipped SFT policy's programs for real. Correctness rewards
# (standard RLVR) give most groups a signal, so a step needs one sampler call rather than the
# three or four that QP-p30's collapsed rewards took; problems whose short references fit in
# 192 new tokens (mini-016's need ~300)
EMBEDDED = ["env=standard_rlvr", "data.problems=[mini-002, mini-014, mini-019]",
            "rollout.max_new_tokens=192", "grpo.horizon=512", "rollout.group_size=4",
            "rollout.prompts_per_call=2", "loop.prompts_per_step=1", "loop.queue_size=4",
            "steps=2"]
LAYOUTS = {"processes": ("processes", True, EMBEDDED), "spread": ("spread", True, EMBEDDED)}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_async_across_processes_survives_sigkill_without_losing_or_repeating_a_prompt(
        tmp_path, name):
    """Two processes x 4 CPU devices, async, the embedded sandbox, a rollout mesh of its own
    (one process's devices, or part of each process's), a checkpoint every step. Both
    processes are SIGKILLed once the first checkpoint is sealed, then restarted: from the groups ledger and the checkpoint's data
    cursor, every loader position up to the cursor was trained or dropped exactly once (none
    twice, none skipped), and no trained group was staler than `grpo.max_staleness`."""
    layout, embedded, extra = LAYOUTS[name]
    out, max_staleness = tmp_path / "run", 1
    steps = int(next(o for o in extra if o.startswith("steps=")).split("=")[1])
    args = ["loop.mode=async", f"mesh.rollout_layout={layout}", "checkpoint.every=1",
            f"grpo.max_staleness={max_staleness}", *extra]
    first = _start_both(out, *args, embedded=embedded)
    deadline = time.monotonic() + 600
    while not (out / "checkpoints" / "1" / "manifest.sha256.json").exists():
        assert time.monotonic() < deadline, "no checkpoint in 10 minutes"
        assert all(p.poll() is None for p in first), "a process ended before its first checkpoint"
        time.sleep(0.2)
    for process in first:
        process.send_signal(signal.SIGKILL)
    for process in first:
        process.wait()
    outputs = _finish(_start_both(out, *args, embedded=embedded))
    for output in outputs:
        assert "resumed from step " in output

    ledger = read_groups(out)
    assert [line["step"] for line in ledger] == list(range(1, steps + 1))
    used = [p for line in ledger for p in
            [q for q, _ in line["trained"]] + line["dropped"] + line["stale"]]
    assert len(used) == len(set(used)), "a loader position was used twice"
    checkpointer = Checkpointer(out, CheckpointConfig(async_save=False))
    try:
        cursor = DataCursor.from_json(checkpointer.saved_json("data", steps)["cursor"])
    finally:
        checkpointer.close()
    consumed = set(range(cursor.next_position)) | set(cursor.consumed_above)
    assert set(used) == consumed, "the ledger and the checkpoint's cursor disagree"
    assert set(range(cursor.next_position)) <= set(used), "a position was skipped"
    for line in ledger:
        for _, version in line["trained"]:
            assert 0 <= (line["step"] - 1) - version <= max_staleness, line
    assert sum(len(line["trained"]) for line in ledger) > 0


@pytest.mark.slow
def test_across_processes_async_with_k1_and_one_call_takes_the_sync_runs_first_step(tmp_path):
    """The fixed schedule samples ahead only after step 1 is dispatched, so step 1's groups are
    sampled at `next` with the starting weights, as in sync mode: the same positions, the same
    metrics (loss, norms: the same parameters after it), bit for bit. The queue metrics say
    what each mode held in flight."""
    common = ["steps=2", "mesh.rollout_devices=4", "loop.weight_sync_every=1",
              "loop.queue_size=4", "checkpoint.every=100"]
    runs = {mode: tmp_path / mode for mode in ("sync", "async")}
    for mode, out in runs.items():
        _finish(_start_both(out, f"loop.mode={mode}", *common))
    first = {mode: read_metrics(out)[0] for mode, out in runs.items()}
    for key in ("loss", "grad_norm", "param_norm", "reward/mean", "groups/seen"):
        assert first["sync"][key] == first["async"][key], key
    assert read_groups(runs["sync"])[0] == read_groups(runs["async"])[0]
    assert all(row["queue/in_flight_groups"] == 0 for row in read_metrics(runs["sync"]))
    ahead = [row["queue/in_flight_groups"] for row in read_metrics(runs["async"])]
    assert max(ahead) > 0 and all(0 <= n <= 4 for n in ahead)


@pytest.mark.slow
def test_a_scorer_that_fails_mid_run_stops_every_process_instead_of_hanging(tmp_path):
    """Async across processes, rollout mesh on process 1 (which scores): its sandbox breaks
    after a few calls. The failure travels in the broadcast the other process waits in, so both
    stop with an error within seconds (without it, process 0 would wait in that collective)."""
    os.environ["DRIVER_SANDBOX_FAILS_AFTER"] = "40"
    try:
        processes = _start_both(tmp_path / "run", "loop.mode=async", "steps=20")
    finally:
        del os.environ["DRIVER_SANDBOX_FAILS_AFTER"]
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    assert all(p.returncode != 0 for p in processes), [o[-2000:] for o in outputs]
    assert "the sandbox fleet went away" in outputs[1]
    assert "the process that scores rollouts failed" in outputs[0]
