"""launch/sandbox_fleet: the shipped manifests and scripts parse, and their flags are real."""

import os
import re
import shlex
import stat
import subprocess
from pathlib import Path

import yaml

from sandbox_cluster.cli import build_parser

FLEET = Path(__file__).resolve().parents[2] / "launch" / "sandbox_fleet"


def test_kubernetes_manifest_is_guaranteed_qos_with_token_and_readiness():
    docs = {d["kind"]: d for d in yaml.safe_load_all((FLEET / "k8s.yaml").read_text()) if d}
    assert set(docs) == {"Secret", "Deployment", "Service"}
    pod = docs["Deployment"]["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    resources = container["resources"]
    assert resources["requests"] == resources["limits"]  # Guaranteed QoS
    assert str(resources["limits"]["cpu"]).isdigit()  # integer CPUs: exclusive cores

    args = build_parser().parse_args(container["args"])
    assert args.command == "serve" and args.host == "0.0.0.0" and args.reserve_cores == 1
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert args.token_file == f"{mounts['token']}/token"
    secret = next(v for v in pod["volumes"] if v["name"] == "token")["secret"]["secretName"]
    assert secret == docs["Secret"]["metadata"]["name"]
    assert args.blob_dir == mounts["blobs"]
    assert container["readinessProbe"]["httpGet"]["path"] == "/health"
    assert pod["terminationGracePeriodSeconds"] > args.drain_timeout_s

    security = container["securityContext"]
    assert security["capabilities"]["drop"] == ["ALL"]
    assert set(security["capabilities"]["add"]) == {"SYS_ADMIN", "SETUID", "SETGID", "KILL"}
    service = docs["Service"]["spec"]
    assert service["clusterIP"] == "None"  # headless: clients see every node
    assert service["selector"] == docs["Deployment"]["spec"]["selector"]["matchLabels"]


def test_systemd_unit_runs_a_valid_serve_command():
    unit = (FLEET / "sandbox-cluster.service").read_text()
    exec_start = re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    default_args = re.search(r"^Environment=SANDBOX_ARGS=(.*)$", unit, re.M).group(1)
    argv = shlex.split(exec_start.replace("$SANDBOX_ARGS", default_args))
    assert argv[0].endswith("/bin/sandbox-cluster")
    args = build_parser().parse_args(argv[1:])
    assert args.command == "serve" and args.host == "0.0.0.0" and args.token_file
    assert "KillSignal=SIGTERM" in unit


def test_fleet_script(tmp_path):
    script = str(FLEET / "fleet.sh")
    subprocess.run(["bash", "-n", script], check=True)
    out = subprocess.run(["bash", script, "urls", "a", "b"], capture_output=True, text=True)
    assert out.stdout.strip() == "http://a:8000,http://b:8000"
    assert subprocess.run(["bash", script], capture_output=True).returncode == 2
    token = tmp_path / "token"
    env = {**os.environ, "TOKEN_FILE": str(token)}
    subprocess.run(["bash", script, "token"], check=True, env=env, capture_output=True)
    assert re.fullmatch(r"[0-9a-f]{64}\n", token.read_text())
    assert stat.S_IMODE(token.stat().st_mode) == 0o600


def test_dockerfile_installs_the_node_entry_point():
    dockerfile = (FLEET / "Dockerfile").read_text()
    assert 'ENTRYPOINT ["sandbox-cluster"]' in dockerfile and "bubblewrap" in dockerfile
