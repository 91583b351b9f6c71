"""`sandbox-cluster` CLI: serve (as a real subprocess on the real pool), health, run."""

import json
import os
import signal
import subprocess
import sys

import pytest

from sandbox_cluster.cli import _parse_cores, _split_cores, main

ADD = "a, b = map(int, input().split())\nprint(a + b)\n"


def test_cores_lists_are_parsed():
    assert _parse_cores("0,2,4-6") == [0, 2, 4, 5, 6]
    with pytest.raises(Exception, match="expected a list like"):
        _parse_cores("x-y")


def test_reserved_cores_are_kept_away_from_slots(monkeypatch):
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1, 2, 3})
    assert _split_cores(None, 0) == ([0, 1, 2, 3], [])
    assert _split_cores(None, 1) == ([1, 2, 3], [0])
    assert _split_cores([2, 3], 1) == ([2, 3], [0])
    with pytest.raises(ValueError, match="leaves no core"):
        _split_cores(None, 4)
    with pytest.raises(ValueError, match="only 2 usable cores are outside"):
        _split_cores([2, 3], 3)


def test_serve_refuses_a_public_bind_without_a_token(capsys, monkeypatch):
    monkeypatch.delenv("SANDBOX_CLUSTER_TOKEN", raising=False)
    assert main(["serve", "--host", "0.0.0.0", "--port", "0"]) == 2
    assert "requires a bearer token" in capsys.readouterr().err


def test_serve_rejects_an_empty_token_file(tmp_path):
    empty = tmp_path / "token"
    empty.write_text("\n")
    with pytest.raises(SystemExit, match="is empty"):
        main(["serve", "--host", "0.0.0.0", "--port", "0", "--token-file", str(empty)])


@pytest.fixture(scope="module")
def node(tmp_path_factory):
    """A real `sandbox-cluster serve` process with a token, on the real pool."""
    token_file = tmp_path_factory.mktemp("cli") / "token"
    token_file.write_text("cli-test-token-0123456789\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "sandbox_cluster.cli", "--log-level", "warning", "serve",
         "--port", "0", "--slots", "1", "--token-file", str(token_file)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    if not line.startswith("sandbox-cluster serving"):
        proc.kill()
        pytest.fail(f"serve did not start: {line!r} {proc.stderr.read()}")
    url = line.split()[2]
    yield proc, url, str(token_file)
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def test_health_and_run_against_a_served_node(node, tmp_path, capsys):
    _, url, token_file = node
    assert main(["health", url]) == 0  # /health needs no token
    reply = json.loads(capsys.readouterr().out)
    assert reply["status"] == "ok" and reply["slots"] == 1 and reply["auth"] is True
    program = tmp_path / "add.py"
    program.write_text(ADD)
    args = ["run", str(program), "--url", url, "--input-text", "2 3", "--expected-text", "5",
            "--time-s", "2", "--json"]
    assert main([*args, "--token-file", token_file]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["status"] == "success" and result["extra"]["node"] == url
    assert main(args) == 2  # no token: the node refuses (401)
    assert "HTTP 401" in capsys.readouterr().err


def test_serve_drains_and_exits_cleanly_on_sigterm(node):
    proc, _, _ = node
    proc.send_signal(signal.SIGTERM)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0
    assert "draining" in out and "stopped (drained)" in out


def test_run_on_the_embedded_pool(tmp_path, capsys):
    program = tmp_path / "add.py"
    program.write_text(ADD)
    (tmp_path / "in1").write_text("1 2\n")
    code = main(["run", str(program), "--input", str(tmp_path / "in1"), "--expected-text", "3",
                 "--input-text", "5 5", "--expected-text", "11", "--time-s", "2"])
    out = capsys.readouterr().out.splitlines()
    assert code == 1  # one wrong answer
    assert out[0].startswith("test 0: success") and out[1].startswith("test 1: wrong_answer")


def test_run_usage_errors(tmp_path, capsys):
    program = tmp_path / "p.py"
    program.write_text("print(1)")
    assert main(["run", str(program)]) == 2
    assert "at least one --input" in capsys.readouterr().err
    assert main(["run", str(program), "--input-text", "1", "--expected-text", "1",
                 "--expected-text", "2"]) == 2
    assert "2 expected outputs for 1 inputs" in capsys.readouterr().err
    assert main(["run", str(program), "--input-text", "1", "--time-s", "0"]) == 2
    with pytest.raises(SystemExit, match="cannot read"):
        main(["run", str(tmp_path / "missing.py"), "--input-text", "1"])


def test_health_of_an_unreachable_node_fails(capsys):
    assert main(["health", "http://127.0.0.1:9", "--timeout-s", "1"]) == 1
    assert json.loads(capsys.readouterr().out)["status"] == "unreachable"


def test_node_side_modules_import_without_jax_or_numpy():
    code = ("import sys, sandbox_cluster.server, sandbox_cluster.fleet, sandbox_cluster.cli, "
            "sandbox_cluster.loadgen; print(sorted(m for m in ('jax', 'numpy', 'yaml') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_console_script_is_installed():
    script = os.path.join(os.path.dirname(sys.executable), "sandbox-cluster")
    out = subprocess.run([script, "--help"], capture_output=True, text=True, timeout=30)
    assert out.returncode == 0 and "serve" in out.stdout and "health" in out.stdout
