"""The metrics writer: JSON lines and TensorBoard events with the same scalars; a resume drops
the steps after the checkpoint from both."""

from __future__ import annotations

import math
import struct

import numpy as np
import pytest
from tensorboardX.proto import event_pb2

from jaxopt_rl.training.metrics import MetricsWriter, read_metrics, read_rollouts


def read_events(folder):
    """Scalars of every TFRecord event file under `folder`: [(step, tag, value)]."""
    out = []
    for path in sorted(folder.rglob("events.out.tfevents.*")):
        data = path.read_bytes()
        at = 0
        while at < len(data):
            (length,) = struct.unpack("<Q", data[at : at + 8])
            payload = data[at + 12 : at + 12 + length]
            at += 12 + length + 4
            event = event_pb2.Event.FromString(payload)
            for value in event.summary.value:
                if value.HasField("simple_value"):
                    out.append((event.step, value.tag, value.simple_value))
    return out


def test_jsonl_and_tensorboard_hold_the_same_scalars(tmp_path):
    with MetricsWriter(tmp_path) as writer:
        for step in range(1, 4):
            writer.write(step, {"loss": np.float32(0.5 / step), "reward/mean": step / 10})
        writer.histogram(3, "queue/staleness", [0, 1, 1, 2])
    records = read_metrics(tmp_path)
    assert [r["step"] for r in records] == [1, 2, 3]
    assert records[1]["loss"] == pytest.approx(0.25)
    events = read_events(tmp_path / "tensorboard")
    scalars = {(s, tag): v for s, tag, v in events}
    for record in records:
        for key in ("loss", "reward/mean"):
            assert scalars[(record["step"], key)] == pytest.approx(record[key], rel=1e-6)


def test_resume_drops_steps_after_the_checkpoint(tmp_path):
    with MetricsWriter(tmp_path) as writer:
        for step in range(1, 6):
            writer.write(step, {"loss": float(step)})
    with MetricsWriter(tmp_path, resume_step=3) as writer:
        writer.write(4, {"loss": 40.0})
    assert [(r["step"], r["loss"]) for r in read_metrics(tmp_path)] == [
        (1, 1.0), (2, 2.0), (3, 3.0), (4, 40.0)
    ]


def test_a_line_torn_by_a_kill_mid_write_is_dropped_on_resume(tmp_path):
    """SIGKILL while a line is written leaves half of it: the resume drops it (its step is
    after the checkpoint) for the metrics and the groups ledger alike; a torn line before the
    end is damage and refused, naming the line."""
    from jaxopt_rl.training.metrics import read_groups

    with MetricsWriter(tmp_path, tensorboard=False) as writer:
        for step in range(1, 4):
            writer.write(step, {"loss": float(step)})
            writer.write_groups(step, [(step, step - 1)], [], [])
    for name in ("metrics.jsonl", "groups.jsonl"):
        with (tmp_path / name).open("a") as log:
            log.write('{"step": 4, "lo')  # the kill
    with MetricsWriter(tmp_path, tensorboard=False, resume_step=3) as writer:
        writer.write(4, {"loss": 4.0})
        writer.write_groups(4, [(9, 3)], [8], [])
    assert [r["step"] for r in read_metrics(tmp_path)] == [1, 2, 3, 4]
    assert [r["trained"] for r in read_groups(tmp_path)] == [[[1, 0]], [[2, 1]], [[3, 2]],
                                                             [[9, 3]]]
    lines = (tmp_path / "metrics.jsonl").read_text().splitlines()
    (tmp_path / "metrics.jsonl").write_text("\n".join([lines[0], "{torn", *lines[1:]]) + "\n")
    with pytest.raises(ValueError, match=r"metrics\.jsonl:2: not a JSON line"):
        MetricsWriter(tmp_path, tensorboard=False, resume_step=3)


def test_fresh_run_starts_a_fresh_log_and_non_finite_is_null(tmp_path):
    with MetricsWriter(tmp_path, tensorboard=False) as writer:
        writer.write(1, {"loss": 1.0})
    with MetricsWriter(tmp_path, tensorboard=False) as writer:
        writer.write(1, {"loss": float("nan"), "ratio_max": float("-inf")})
    assert read_metrics(tmp_path) == [
        {"step": 1, "time": read_metrics(tmp_path)[0]["time"], "loss": None, "ratio_max": None}
    ]
    with MetricsWriter(tmp_path, tensorboard=False) as writer, pytest.raises(ValueError):
        writer.write(2, {"vector": np.ones(3)})


def test_window_logs_the_groups_feedback_resolution():
    """docs/design/rewards.md §7: GFR_G = -1/(G-1) log sum_z p_z^G over a group's feedback values. A
    2-2 split of 4 gives -1/3 log(2 * (1/2)^4) = log(2); a group that collides gives 0; a NaN
    (dropped) reward is not a member."""
    from jaxopt_rl.rollouts.testing import synthetic_rollouts
    from jaxopt_rl.training.batch import Offered
    from jaxopt_rl.training.window import StepWindow

    window = StepWindow(peak_flops=None, params=1)
    rewards_PG = [[1.0, 1.0, -1.0, -1.0], [0.5, 0.5, 0.5, float("nan")]]
    tokens = [np.ones(1, np.int32)] * 4
    window.add_rollouts(synthetic_rollouts([tokens[0]] * 2, [tokens] * 2, np.array(rewards_PG)),
                        Offered(groups=2))
    assert window.feedback_resolution[0] == pytest.approx(math.log(2.0), rel=1e-5)
    assert window.feedback_resolution[1] == pytest.approx(0.0, abs=1e-6)
    scalars = window.scalars({})
    assert scalars["groups/feedback_resolution"] == pytest.approx(math.log(2.0) / 2, rel=1e-5)


def test_tensorboard_import_leaves_torch_importable(tmp_path):
    """tensorboardX is imported with torch hidden (it costs seconds, and we pass no torch
    tensors); torch must stay importable for whoever asks for it afterwards."""
    import importlib.util
    import subprocess
    import sys

    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed: nothing to hide")
    code = ("import sys\n"
            "from jaxopt_rl.training.metrics import MetricsWriter\n"
            f"with MetricsWriter({str(tmp_path)!r}) as writer:\n"
            "    writer.write(1, {'loss': 0.5})\n"
            "assert 'torch' not in sys.modules, 'tensorboardX pulled in torch'\n"
            "import torch\n"
            "print(torch.tensor([1.0]).sum().item())\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "1.0"
    assert [(s, t) for s, t, _ in read_events(tmp_path / "tensorboard")] == [(1, "loss")]


def test_rollout_log_is_kept_only_when_asked_and_resumes_like_the_metrics(tmp_path):
    with MetricsWriter(tmp_path, tensorboard=False) as writer:
        writer.write_rollouts(1, [{"problem_id": "a", "reward": 0.5}])
    assert not (tmp_path / "rollouts.jsonl").exists()
    with MetricsWriter(tmp_path, tensorboard=False, rollouts=True) as writer:
        for step in (1, 2, 3):
            writer.write_rollouts(step, [{"problem_id": "a", "reward": step},
                                         {"problem_id": "b", "reward": None}])
    assert [(r["step"], r["problem_id"]) for r in read_rollouts(tmp_path)] == [
        (1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "a"), (3, "b")]
    # resumed from the checkpoint of step 2: step 3's rollouts are sampled again, logged once
    with MetricsWriter(tmp_path, tensorboard=False, rollouts=True, resume_step=2) as writer:
        writer.write_rollouts(3, [{"problem_id": "c", "reward": 1.0}])
    assert [(r["step"], r["problem_id"]) for r in read_rollouts(tmp_path)] == [
        (1, "a"), (1, "b"), (2, "a"), (2, "b"), (3, "c")]
    with MetricsWriter(tmp_path, tensorboard=False, rollouts=True):
        pass  # a fresh run starts a fresh log
    assert read_rollouts(tmp_path) == []
