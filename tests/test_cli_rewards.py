"""`jaxopt-rl rewards`: the shipped example end to end, and exit 2 on bad input."""

import json
import re

import numpy as np
import pyarrow.parquet as pq
import pytest

from jaxopt_rl.cli import main
from jaxopt_rl.commands import rewards as rewards_command
from jaxopt_rl.data.examples import EXAMPLE_RECORDS
from jaxopt_rl.data.execution_records import load_record_batch
from jaxopt_rl.rewards.env_config import load_env_config
from jaxopt_rl.rewards.environment import rewards_and_signals


def test_rewards_on_the_example_writes_what_the_library_computes(tmp_path, capsys):
    out, plot = tmp_path / "out.parquet", tmp_path / "rewards.png"
    code = main(["rewards", "--records", str(EXAMPLE_RECORDS), "--env", "qp_p30",
                 "gates.quality_threshold=0.5", "--out", str(out), "--plot", str(plot)])
    assert code == 0
    printed = capsys.readouterr().out
    assert "cf-1466F" in printed and "per problem" in printed and "1 inconclusive" in printed
    table = pq.read_table(out).to_pydict()
    assert len(table["reward"]) == 48 and table["problem_id"][0] == "cf-1466F"
    batch, index = load_record_batch(EXAMPLE_RECORDS)
    env = load_env_config("qp_p30", ["gates.quality_threshold=0.5"])
    reward_B, sig = rewards_and_signals(batch, env, all_rankings=True)
    got = np.array([np.nan if r is None else r for r in table["reward"]], dtype=np.float32)
    np.testing.assert_array_equal(got, index.real(reward_B))
    np.testing.assert_array_equal(table["c_strict"], index.real(sig.c_strict_B))
    assert [(p, r) for p, r in zip(table["problem_id"], table["rollout_id"])] == list(index.rollouts)
    assert sum(r is None for r in table["reward"]) == 1
    assert plot.stat().st_size > 10_000


def test_rewards_jsonl_output_and_per_rollout_table(tmp_path, capsys):
    out = tmp_path / "out.jsonl"
    assert main(["rewards", "--records", str(EXAMPLE_RECORDS), "--env", "abs_2s", "--out",
                 str(out), "--per-rollout"]) == 0
    printed = capsys.readouterr().out
    assert "per rollout" in printed and "r7" in printed
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 48 and set(rows[0]) >= {"problem_id", "rollout_id", "c_cor", "c_strict",
                                                 "g", "q", "phi", "q_qar", "q_qp", "reward"}
    assert all(row["reward"] in (-1.0, 1.0, None) for row in rows)


def test_rewards_runs_on_the_shipped_example(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["rewards", "--example", "--env", "mc"]) == 0
    assert "Try another environment" in capsys.readouterr().out
    assert (tmp_path / "runs" / "rewards_example" / "rewards_mc.parquet").is_file()
    assert (tmp_path / "runs" / "rewards_example" / "rewards_mc.png").is_file()


def test_rewards_without_records_names_the_missing_flag(capsys):
    assert main(["rewards", "--env", "mc"]) == 2
    assert "--records" in capsys.readouterr().err


def test_padding_rollouts_never_reach_the_outputs(tmp_path, capsys):
    """A file with ragged groups: the batch pads them; the tables and the written rows do not."""
    lines = EXAMPLE_RECORDS.read_text().splitlines()
    dropped = {("cf-1466F", "r7"), ("cf-1398C", "r6"), ("cf-1398C", "r7")}
    kept = [line for line in lines
            if (json.loads(line)["problem_id"], json.loads(line).get("rollout_id")) not in dropped]
    path = tmp_path / "ragged.jsonl"
    path.write_text("\n".join(kept) + "\n")
    batch, index = load_record_batch(path)
    assert batch.num_rollouts == 48 and len(index.rollouts) == 45
    out = tmp_path / "out.jsonl"
    assert main(["rewards", "--records", str(path), "--env", "qp_p30", "--out", str(out),
                 "--per-rollout"]) == 0
    printed = capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(row["problem_id"], row["rollout_id"]) for row in rows] == list(index.rollouts)
    assert re.search(r"│ cf-1398C\s+│\s+6 │", printed) and re.search(r"│ all\s+│\s+45 │", printed)
    assert "1 rollout(s) without a defined reward" in printed
    summary = rewards_command.problem_summary(rewards_command.compute(path, load_env_config("mc")))
    assert [row["rollouts"] for row in summary] == [7, 6, 8, 8, 8, 8]
    # the real rollouts score as in the full file (rewards do not depend on group mates)
    full_batch, full_index = load_record_batch(EXAMPLE_RECORDS)
    env = load_env_config("qp_p30")
    full = dict(zip(full_index.rollouts, full_index.real(rewards_and_signals(full_batch, env)[0])))
    for row in rows:
        want = full[(row["problem_id"], row["rollout_id"])]
        assert (row["reward"] is None and np.isnan(want)) or row["reward"] == want


def rows_with(tmp_path, line_number, **change):
    """The first 60 lines of the example with one row changed (or a key removed via None)."""
    lines = EXAMPLE_RECORDS.read_text().splitlines()[:60]
    row = json.loads(lines[line_number - 1])
    for key, value in change.items():
        if value is None:
            row.pop(key)
        else:
            row[key] = value
    lines[line_number - 1] = json.dumps(row)
    path = tmp_path / "bad.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"status": None}, "line 5 (problem 'cf-1466F'): missing column 'status'"),
        ({"status": "accepted"}, "line 5 (problem 'cf-1466F'): column 'status': unknown value"),
        ({"duration_s": -0.01}, "line 5 (problem 'cf-1466F'): column 'duration_s': must be >= 0"),
    ],
)
def test_malformed_records_exit_2_with_one_precise_line(tmp_path, capsys, change, message):
    path = rows_with(tmp_path, 5, **change)
    assert main(["rewards", "--records", str(path), "--env", "mc"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert err.startswith("jaxopt-rl rewards: error: ") and message in err and str(path) in err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--env", "qp_p30", "gates.quality_threshold=40"],
         "config error: configs/env/qp_p30.yaml: gates.quality_threshold: must be in [0, 1]"),
        (["--env", "no_such_env"], "config error: unknown environment 'no_such_env'"),
        (["--env", "river"], "environment 'river' is kind=river"),
        (["--env", "mc", "--out", "results.csv"], "use a .parquet or .jsonl file name"),
    ],
)
def test_bad_config_or_options_exit_2(capsys, argv, message):
    assert main(["rewards", "--records", str(EXAMPLE_RECORDS), *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and message in err


def test_the_removed_set_option_is_refused_naming_the_key_value_form(capsys):
    # one override syntax: `--set k=v` from before the change must not be silently ignored
    with pytest.raises(SystemExit) as exit_info:
        main(["rewards", "--example", "--env", "qp_p30", "--set", "ranking.ties=average"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "--set was removed" in err and "ranking.ties=average" in err


def test_example_report_applies_the_overrides(monkeypatch, tmp_path):
    # `--example` once dropped its overrides; the rewards written must be the library's under
    # the overridden environment, and differ from the shipped one's
    monkeypatch.chdir(tmp_path)
    assert main(["rewards", "--example", "--env", "qp_p30", "gates.quality_threshold=0.05"]) == 0
    table = pq.read_table(tmp_path / "runs/rewards_example/rewards_qp_p30.parquet").to_pydict()
    got = np.array([np.nan if r is None else r for r in table["reward"]], dtype=np.float32)
    batch, index = load_record_batch(EXAMPLE_RECORDS)
    for overrides, equal in (([], False), (["gates.quality_threshold=0.05"], True)):
        reward_B, _ = rewards_and_signals(batch, load_env_config("qp_p30", overrides),
                                          all_rankings=True)
        same = np.array_equal(got, index.real(reward_B), equal_nan=True)
        assert same == equal
