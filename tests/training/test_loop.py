"""The GRPO loop end to end on the tiny model: phases, metrics, checkpoints, resume, staleness.

Each run is a separate process with one CPU device (`loop_driver.py`, as on a laptop; the test
session itself has 8 fake devices). Its sandbox is a deterministic double and every completion
counts as a program, so groups carry signal without a trained model.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given

from jaxopt_rl.training.cursor import DataCursor

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["env=standard_rlvr", "steps=3", "rollout.max_new_tokens=16", "rollout.group_size=2",
         "rollout.prompts_per_call=1", "loop.prompts_per_step=1", "loop.max_groups_per_step=40",
         "grpo.rows=2", "grpo.horizon=128", "checkpoint.every=2", "checkpoint.async_save=false"]


def _start(out, *overrides, slow=0.0, **popen):
    env = {k: v for k, v in os.environ.items() if k != "XLA_FLAGS"}
    popen = popen or {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, "text": True}
    return subprocess.Popen([sys.executable, str(ROOT / "tests/training/loop_driver.py"),
                             str(out), str(slow), *SMALL, *overrides], cwd=ROOT, env=env,
                            **popen)


def _finish(process) -> subprocess.CompletedProcess:
    try:
        stdout, stderr = process.communicate(timeout=900)
    except subprocess.TimeoutExpired:
        process.kill()
        raise
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _run(out, *overrides, slow=0.0):
    return _finish(_start(out, *overrides, slow=slow))


def _metrics(path):
    return [json.loads(line) for line in (path / "metrics.jsonl").read_text().splitlines()]


def _steps_saved(out):
    return sorted(int(p.name) for p in (out / "checkpoints").iterdir() if p.name.isdigit())


@pytest.mark.slow
def test_sync_run_logs_checkpoints_and_resumes(tmp_path):
    out = tmp_path / "run"
    done = _run(out, "loop.mode=sync")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _metrics(out)
    assert [r["step"] for r in rows] == [1, 2, 3]
    for key in ("loss", "pg_loss", "reward/mean", "groups/zero_advantage_rate",
                "pass/c_cor", "time/sample_s", "time/train_s", "tokens/trained_per_s",
                "sandbox/infra_error_rate", "clip_low", "clip_high"):
        assert key in rows[-1], key
    assert (out / "config.yaml").is_file() and (out / "tensorboard").is_dir()
    assert "| train |" in (out / "summary.md").read_text()
    assert _steps_saved(out) == [2, 3]
    # every jitted function compiled during the first step: none recompiles per step
    assert rows[1]["compiles/total"] == rows[2]["compiles/total"] > 0
    assert rows[2]["memory/rss_mb"] > 0
    # sync mode samples with the weights it trains: sampler and trainer log-probs agree
    assert all(r["logp_mismatch"] < 1e-4 and r["ratio_max"] < 1 + 1e-3 for r in rows)
    assert "resumed" not in done.stdout  # a fresh run says nothing about resuming

    done = _run(out, "loop.mode=sync", "steps=5")
    assert done.returncode == 0, done.stderr[-3000:]
    first = done.stdout.splitlines()[0]
    assert first.startswith("resumed from step 3 of ") and first.endswith("checkpoints/3")
    assert [r["step"] for r in _metrics(out)] == [1, 2, 3, 4, 5]
    # the summary audits the groups ledger of both invocations: counted here from its lines
    ledger = [json.loads(line) for line in (out / "groups.jsonl").read_text().splitlines()]
    assert [line["step"] for line in ledger] == [1, 2, 3, 4, 5]
    counts = [sum(len(line[kind]) for line in ledger) for kind in ("trained", "dropped", "stale")]
    assert counts[0] >= 5  # one prompt a step
    assert (f"Prompts (loader positions) used: {counts[0]} trained, {counts[1]} dropped (no "
            f"signal or undefined), {counts[2]} stale; used twice: 0") \
        in (out / "summary.md").read_text()

    done = _run(out, "loop.mode=sync", "steps=7", "model.num_layers=3")
    assert done.returncode == 2 and "model.num_layers" in done.stdout


@pytest.mark.slow
def test_async_staleness_bound_drops_and_counts_old_groups(tmp_path):
    # A slow trainer and a fast producer: queued groups age past S_max = 0 and are dropped.
    out = tmp_path / "run"
    done = _run(out, "loop.mode=async", "grpo.max_staleness=0", "loop.queue_size=8", slow=2.0)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _metrics(out)
    assert sum(r["groups/stale_dropped"] for r in rows) > 0
    for r in rows:
        if "queue/staleness_max" in r:
            assert r["queue/staleness_max"] <= 0  # nothing older than S_max was trained


@given(st.permutations(list(range(12))), st.integers(0, 12))
def test_cursor_records_exactly_what_was_consumed(order, count):
    cursor = DataCursor()
    for position in order[:count]:
        cursor.consume(position)
    consumed = set(order[:count])
    restored = DataCursor.from_json(json.loads(json.dumps(cursor.to_json())))
    # every position below the cursor is consumed, the set above lists the rest of them
    assert set(range(restored.next_position)) | restored.consumed_above == consumed
    assert restored.next_position not in consumed
    assert np.all(np.asarray(sorted(restored.consumed_above)) > restored.next_position)


def _final_state(out, step):
    import orbax.checkpoint as ocp

    with ocp.PyTreeCheckpointer() as reader:
        return reader.restore((out / "checkpoints" / str(step) / "state").absolute())


@pytest.mark.slow
def test_sigkill_after_the_second_checkpoint_then_resume_is_bitwise_identical(tmp_path):
    """Sync mode on a deterministic environment: rewards depend on the completions only."""
    import signal
    import time

    args = ["loop.mode=sync", "steps=4", "checkpoint.every=1"]
    straight = tmp_path / "straight"
    uninterrupted = _start(straight, *args)  # runs beside the killed one: one core each
    try:
        killed = tmp_path / "killed"
        process = _start(killed, *args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.time() + 600
        while not (killed / "checkpoints" / "2").is_dir():
            assert process.poll() is None, "the run ended before its second checkpoint"
            assert time.time() < deadline
            time.sleep(0.05)
        process.send_signal(signal.SIGKILL)
        process.wait()
        assert not (killed / "checkpoints" / "4").exists(), "killed too late to test a resume"

        done = _run(killed, *args)
        assert done.returncode == 0, done.stderr[-3000:]
        assert done.stdout.splitlines()[0].startswith("resumed from step ")
        done = _finish(uninterrupted)
        assert done.returncode == 0, done.stderr[-3000:]
    finally:  # an assertion failed above: leave no run behind
        if uninterrupted.poll() is None:
            uninterrupted.kill()
    a, b = _final_state(straight, 4), _final_state(killed, 4)
    assert sorted(a) == sorted(b)
    for key in a:
        np.testing.assert_array_equal(np.asarray(a[key]), np.asarray(b[key]), err_msg=key)


@pytest.mark.slow
def test_group_cap_steps_short_or_fails_by_choice(tmp_path):
    """`loop.max_groups_per_step` bounds what one step may sample: with `when_capped=step` the
    step trains on what arrived (the budget the demo holds equal between runs); with `fail`
    the run stops and names the key, never spinning."""
    capped = ["loop.mode=sync", "steps=2", "loop.prompts_per_step=2",
              "loop.max_groups_per_step=1"]
    out = tmp_path / "step"
    stepping = _start(out, *capped, "loop.when_capped=step")
    failed = _run(tmp_path / "fail", *capped)  # the two runs side by side: one core each
    done = _finish(stepping)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert all(r["groups/seen"] == 1 and r["steps/capped"] == 1 for r in rows)
    assert failed.returncode != 0
    assert "loop.max_groups_per_step=1" in failed.stderr


@pytest.mark.slow
def test_kl_to_a_loaded_reference_trains(tmp_path):
    """`grpo.kl_coef > 0` from `init_from`: the frozen reference is the loaded checkpoint, held
    in buffers of its own (the step donates the state; one buffer donated twice is refused).
    docs/design/training.md §1: k3 is 0 while the policy equals its reference (step 1) and > 0 once
    it has moved."""
    out = tmp_path / "kl"
    done = _run(out, "loop.mode=sync", "steps=2", "grpo.kl_coef=0.05",
                "init_from=jaxopt_rl/demo/assets/sft_tiny")
    assert done.returncode == 0, done.stderr[-3000:]
    rows = _metrics(out)
    assert [r["step"] for r in rows] == [1, 2]
    assert rows[0]["kl"] == pytest.approx(0.0, abs=1e-6) and rows[1]["kl"] > 0


def test_sampler_weights_survive_the_donating_step_and_keep_their_shardings():
    import jax
    import jax.numpy as jnp
    from jax.sharding import NamedSharding, PartitionSpec

    from jaxopt_rl.training.loop import Weights

    mesh = jax.make_mesh((2, 4), ("data", "fsdp"))
    sharded = NamedSharding(mesh, PartitionSpec("fsdp", None))
    params = {"w": jax.device_put(jnp.arange(32.0).reshape(8, 4), sharded),
              "b": jnp.ones(3, jnp.bfloat16)}
    weights = Weights(params, version=7)
    donate = jax.jit(lambda tree: jax.tree.map(lambda x: x * 0, tree), donate_argnums=0)
    donate(params)  # the train step reuses the state's buffers in place
    assert params["w"].is_deleted()
    copied, version = weights.get()
    assert version == 7
    np.testing.assert_array_equal(np.asarray(copied["w"]), np.arange(32.0).reshape(8, 4))
    assert copied["w"].sharding.is_equivalent_to(sharded, 2)
    assert copied["b"].dtype == jnp.bfloat16 and float(copied["b"].sum()) == 3.0


@pytest.mark.slow
def test_parameters_that_turn_non_finite_stop_the_run_before_a_checkpoint(tmp_path):
    """A learning rate of 1e30 moves every parameter by ~1e30 on the first Adam step,
    so the parameter norm overflows float32; the run stops naming the step and saves nothing."""
    out = tmp_path / "run"
    done = _run(out, "loop.mode=sync", "steps=2", "checkpoint.every=1",
                "optimizer.learning_rate=1e30", "optimizer.warmup_steps=0")
    assert done.returncode != 0
    assert "step 1: the parameters are no longer finite" in done.stderr
    assert not (out / "checkpoints").exists() or _steps_saved(out) == []


@pytest.mark.slow
def test_best_metric_keeps_the_step_with_the_best_logged_value(tmp_path):
    """`checkpoint.best_metric` ranks a GRPO run's checkpoints by a metric of its lines (the
    loop used to give Orbax none, so any name failed at the first save); an unknown name stops
    the run at that save, naming the key."""
    done = _run(tmp_path / "bad", "checkpoint.best_metric=nope")
    assert done.returncode == 2  # the driver's status for a ConfigError
    # at its first metric line, not at its first save (step 2 here)
    assert "config error: checkpoint.best_metric: 'nope' is not a metric of this run (step 1)" \
        in done.stdout
    assert not (tmp_path / "bad" / "checkpoints").exists() or not _steps_saved(tmp_path / "bad")
    out = tmp_path / "run"
    done = _run(out, "steps=4", "checkpoint.every=1", "checkpoint.keep=1",
                "checkpoint.best_metric=reward/mean", "checkpoint.best_mode=max")
    assert done.returncode == 0, done.stderr[-3000:]
    reward = {row["step"]: row["reward/mean"] for row in _metrics(out)}
    best = max(reward.values())
    kept = _steps_saved(out)
    assert 4 in kept and len(kept) <= 2, kept  # the latest, and the best when it is another
    assert any(reward[step] == best for step in kept), (kept, reward)


@pytest.mark.slow
def test_a_corrupt_newest_checkpoint_is_refused_or_passed_over_by_choice(tmp_path):
    """Bytes flipped in checkpoint 2 once resumed silently and failed a step later with a
    message blaming the environment. Now the resume refuses it naming the intact step 1, or
    with `checkpoint.on_corrupt=previous` resumes from step 1 and says why."""
    out = tmp_path / "run"
    done = _run(out, "loop.mode=sync", "steps=2", "checkpoint.every=1")
    assert done.returncode == 0, done.stderr[-3000:]
    data = sorted(p for p in (out / "checkpoints" / "2" / "state").rglob("*")
                  if p.is_file() and p.stat().st_size > 128 and "manifest" not in p.name)
    assert data
    for path in data:
        raw = bytearray(path.read_bytes())
        middle = len(raw) // 2
        raw[middle:middle + 64] = bytes(b ^ 0xFF for b in raw[middle:middle + 64])
        path.write_bytes(bytes(raw))
    refused = _run(out, "loop.mode=sync", "steps=3", "checkpoint.every=1")
    assert refused.returncode != 0 and "checkpoints/1" in refused.stderr
    done = _run(out, "loop.mode=sync", "steps=3", "checkpoint.every=1",
                "checkpoint.on_corrupt=previous")
    assert done.returncode == 0, done.stderr[-3000:]
    first = done.stdout.splitlines()[0]
    assert first.startswith("resumed from step 1 of ") and "step 2 failed verification" in first
    assert _steps_saved(out)[-1] == 3
