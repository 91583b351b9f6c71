"""Load and failover against real `sandbox-cluster serve` processes running the real pool (jails).

* 8 clients x 25 requests x 25 tests = 5,000 executions through one node: nothing lost,
  duplicated or mixed up, and the node executed each test exactly once.
* Two nodes; one is killed (SIGKILL to its whole process group, i.e. the node dies) while
  requests are in flight: every request still completes, on the survivor, with no loss and
  no duplicate.
"""

import os
import signal
import subprocess
import sys
import threading
import urllib.request

import pytest

from sandbox_cluster.loadgen import run_load
from tests.sandbox_cluster.test_metrics import parse_exposition

pytestmark = pytest.mark.slow


class NodeProcess:
    """`sandbox-cluster serve --port 0` in its own session; `url` from its first stdout line."""

    def __init__(self, *args: str):
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "sandbox_cluster.cli", "--log-level", "error", "serve",
             "--port", "0", *args],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
        line = self.proc.stdout.readline()
        if not line.startswith("sandbox-cluster serving"):
            self.kill()
            pytest.fail(f"node did not start: {line!r} {self.proc.stderr.read()}")
        self.url = line.split()[2]

    def metrics(self) -> dict:
        with urllib.request.urlopen(self.url + "/metrics", timeout=10) as response:
            return parse_exposition(response.read().decode())

    def kill(self) -> None:
        """The node dies: the server and every jail it started, at once."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=30)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()


def executed(samples: dict) -> int:
    return int(sum(v for (name, _), v in samples.items()
                   if name == "sandbox_test_results_total"))


def test_5000_executions_from_8_clients_lose_and_duplicate_nothing():
    node = NodeProcess("--slots", "2")
    try:
        report = run_load([node.url], clients=8, requests_per_client=25, tests_per_request=25,
                          health_interval_s=0.5, max_in_flight=8)
        print("load figures:", report.to_json())
        assert report.requests == 200 and report.executions == 5000
        assert report.lost == report.duplicated == report.mismatched == 0
        assert report.statuses == {"success": 5000}
        assert report.nodes == {node.url: 5000}
        assert executed(node.metrics()) == 5000  # the node ran each test exactly once
    finally:
        node.stop()


def test_killing_a_node_mid_load_completes_every_request_on_the_survivor():
    cores = sorted(os.sched_getaffinity(0))
    victim = NodeProcess("--slots", "1", "--cores", str(cores[0]))
    survivor = NodeProcess("--slots", "1", "--cores", str(cores[-1]))
    killed = threading.Event()

    def kill_after_a_quarter(done: int) -> None:
        if done >= 20 and not killed.is_set():
            killed.set()
            victim.kill()

    try:
        report = run_load([victim.url, survivor.url], clients=4, requests_per_client=20,
                          tests_per_request=10, on_request_done=kill_after_a_quarter,
                          health_interval_s=0.2, max_in_flight=4)
        print("kill figures:", report.to_json())
        assert killed.is_set() and victim.proc.poll() is not None
        assert report.requests == 80 and report.executions == 800
        assert report.lost == report.duplicated == report.mismatched == 0
        assert report.statuses == {"success": 800}
        assert set(report.nodes) == {victim.url, survivor.url}
        assert report.client_stats["failovers"] >= 1  # requests were in flight on the victim
        assert report.nodes[survivor.url] > 400
    finally:
        victim.kill()
        survivor.stop()
