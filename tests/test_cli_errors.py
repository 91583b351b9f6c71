"""How `jaxopt-rl` ends a command that fails: an expected failure is one line on
stderr and exit status 2; anything else keeps its traceback and says it is a bug."""

from __future__ import annotations

import pytest

from jaxopt_rl import cli
from jaxopt_rl.config import ConfigError
from jaxopt_rl.errors import RunStopped
from jaxopt_rl.manifest import CheckpointError
from sandbox_cluster.jails.base import JailUnavailable


def _fail_with(monkeypatch, error):
    import jaxopt_rl.commands.export as export

    def run(args):
        raise error

    monkeypatch.setattr(export, "run", run)


@pytest.mark.parametrize(("error", "kind"), [
    (RunStopped("step 3: no group carried a signal"), "run stopped"),
    (ConfigError("grpo.rows: must be >= 1"), "config error"),
    (CheckpointError("runs/x/checkpoints/2: state/a: digest differs"), "checkpoint error"),
    (JailUnavailable("no jail backend runs on this host"), "sandbox unavailable"),
    (FileNotFoundError("data.dataset='x': not 'mini'"), "error"),
])
def test_an_expected_failure_is_one_line_and_status_2(monkeypatch, capsys, error, kind):
    _fail_with(monkeypatch, error)
    assert cli.main(["export", "a", "b"]) == 2
    assert capsys.readouterr().err.splitlines() == [f"jaxopt-rl export: {kind}: {error}"]


def test_a_bug_keeps_its_traceback_and_says_so(monkeypatch, capsys):
    _fail_with(monkeypatch, TypeError("unsupported operand"))
    assert cli.main(["export", "a", "b"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and "TypeError: unsupported operand" in err
    assert err.strip().splitlines()[-1].startswith("jaxopt-rl export: unexpected error: this is "
                                                   "a bug")


def test_an_invalid_hugging_face_config_json_is_one_line_and_status_2(tmp_path, capsys):
    import json

    from jaxopt_rl.config import PROJECT_ROOT

    folder = tmp_path / "model"
    folder.mkdir()
    shipped = json.loads((PROJECT_ROOT / "jaxopt_rl/demo/assets/sft_tiny/config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**shipped, "num_hidden_layers": -2}))
    status = cli.main(["eval", "--model", str(folder), "--n", "1", "--out", str(tmp_path / "out"),
                       "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1
    assert err[0].startswith("jaxopt-rl eval: ") and "this is a bug" not in err[0]
    assert f"{folder / 'config.json'}: " in err[0] and "num_hidden_layers" in err[0]


def test_a_sandbox_fleet_that_is_down_is_one_line_before_any_sampling(monkeypatch, tmp_path,
                                                                       capsys):
    """`eval --urls` of a fleet with no node up once sampled every model, then sent jobs that
    each waited out the failover deadline, for many minutes without a word."""
    import functools
    import socket

    import jaxopt_rl.evaluation.evaluate as ev
    import sandbox_cluster

    def sampled(*args, **kwargs):
        raise AssertionError("sampled before connecting to the sandbox")

    monkeypatch.setattr(sandbox_cluster, "connect", functools.partial(sandbox_cluster.connect,
                                                                      startup_deadline_s=0.5))
    monkeypatch.setattr(ev, "reference_programs", sampled)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    status = cli.main(["eval", "--model", "@references", "--n", "1", "--urls", url,
                       "--out", str(tmp_path / "out"), "--cache-dir", str(tmp_path / "cache")])
    err = capsys.readouterr().err.splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"jaxopt-rl eval: sandbox unavailable: no sandbox node answered "
                             f"/health within 0.5 s of connecting ({url}: ")
