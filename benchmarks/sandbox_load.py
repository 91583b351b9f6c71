"""Fleet path vs embedded pool on the same load, in the same run; blob reuse; failover.

    flock /tmp/jaxopt-bench.lock .venv/bin/python benchmarks/sandbox_load.py \
        [--clients 8 --requests 25 --tests 25 --slots 2] [--plot latency.png]

Phases (each prints one JSON object on stdout, then a summary object):
1. `embedded`: `run_load` against an in-process LocalPool (the baseline: no HTTP).
2. `fleet`: the same load through one `sandbox-cluster serve` process with the same slots.
   Figure of merit: `fleet_over_embedded_throughput` (1.0 = HTTP costs nothing).
3. `blobs`: one program on `--blob-tests` tests of `--blob-kb` KiB inputs, run 5 times through
   the fleet client: the first call uploads, the next ones send only hashes
   (`later_over_first_seconds` < 1 shows the saving; `uploads` must equal the distinct blobs).
4. `failover`: two nodes, one SIGKILLed after a quarter of the requests; all must complete.
Every phase checks lost/duplicated/mismatched == 0 and exits 1 otherwise. Runs in about a
minute on 2 cores with the defaults; timings are only comparable under the same machine load.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import threading
import time
import urllib.request

from sandbox_cluster import Limits, TestCase, connect
from sandbox_cluster.loadgen import LoadReport, run_load
from sandbox_cluster.pool import LocalPool


def start_node(*args: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-m", "sandbox_cluster.cli", "--log-level", "error",
                             "serve", "--port", "0", *args], stdout=subprocess.PIPE, text=True,
                            start_new_session=True)
    line = proc.stdout.readline()
    if not line.startswith("sandbox-cluster serving"):
        proc.kill()
        raise SystemExit(f"node did not start: {line!r}")
    return proc, line.split()[2]


def stop_node(proc: subprocess.Popen, hard: bool = False) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGKILL if hard else signal.SIGTERM)
        proc.wait(timeout=60)


def blob_uploads(url: str) -> int:
    with urllib.request.urlopen(url + "/metrics", timeout=10) as response:
        for line in response.read().decode().splitlines():
            if line.startswith("sandbox_blob_uploads_total "):
                return int(float(line.split()[1]))
    return -1


def check(report: LoadReport) -> bool:
    return report.lost == report.duplicated == report.mismatched == report.inconclusive == 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--requests", type=int, default=25)
    parser.add_argument("--tests", type=int, default=25)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--blob-tests", type=int, default=20)
    parser.add_argument("--blob-kb", type=int, default=512)
    parser.add_argument("--plot", help="write a p50/p95 request-latency bar chart (PNG) here")
    args = parser.parse_args()
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    shape = {"clients": args.clients, "requests_per_client": args.requests,
             "tests_per_request": args.tests, "limits": Limits(time_s=5)}
    cores = sorted(os.sched_getaffinity(0))[:args.slots]
    figures: dict = {"machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                                 "loadavg_1m": os.getloadavg()[0]}, "shape": shape | {
                                     "limits": shape["limits"].to_json()}}
    latencies: dict[str, list[float]] = {}
    ok = True

    with LocalPool(slots=args.slots, cores=cores) as pool:
        embedded = run_load(None, pool=pool, **shape)
    print(json.dumps({"phase": "embedded", **embedded.to_json()}), flush=True)
    ok &= check(embedded)

    proc, url = start_node("--slots", str(args.slots), "--cores", ",".join(map(str, cores)))
    try:
        fleet = run_load([url], health_interval_s=0.5, **shape)
        print(json.dumps({"phase": "fleet", **fleet.to_json()}), flush=True)
        ok &= check(fleet)

        size = args.blob_kb * 1024
        tests = [TestCase(f"{i:06d}" + "x" * (size - 7) + "\n") for i in range(args.blob_tests)]
        program = "import sys\nprint(len(sys.stdin.read()))\n"
        seconds = []
        with connect([url]) as sb:
            for _ in range(5):
                started = time.monotonic()
                results = sb.run(program, tests, Limits(time_s=5))
                seconds.append(time.monotonic() - started)
                ok &= all(r.stdout.strip() == str(size).encode() for r in results)
        uploads = blob_uploads(url)
        blobs = {"phase": "blobs", "tests": args.blob_tests, "input_kib": args.blob_kb,
                 "seconds": [round(s, 3) for s in seconds], "uploads": uploads,
                 "later_over_first_seconds": round(sum(seconds[1:]) / 4 / seconds[0], 3)}
        ok &= uploads == args.blob_tests
        print(json.dumps(blobs), flush=True)
    finally:
        stop_node(proc)

    victim, victim_url = start_node("--slots", "1", "--cores", str(cores[0]))
    survivor, survivor_url = start_node("--slots", "1", "--cores", str(cores[-1]))
    killed = threading.Event()
    quarter = args.clients * args.requests // 4

    def kill(done: int) -> None:
        if done >= quarter and not killed.is_set():
            killed.set()
            stop_node(victim, hard=True)

    try:
        failover = run_load([victim_url, survivor_url], on_request_done=kill,
                            health_interval_s=0.2, **shape)
    finally:
        stop_node(victim, hard=True)
        stop_node(survivor)
    print(json.dumps({"phase": "failover", **failover.to_json()}), flush=True)
    ok &= check(failover) and killed.is_set()

    if args.plot:
        latencies = {"embedded": embedded, "fleet": fleet, "failover (1 of 2 killed)": failover}
        write_plot(args.plot, latencies)

    figures.update({
        "embedded_executions_per_s": round(embedded.executions_per_s, 1),
        "fleet_executions_per_s": round(fleet.executions_per_s, 1),
        "fleet_over_embedded_throughput": round(fleet.executions_per_s
                                                / embedded.executions_per_s, 3),
        "blob_later_over_first_seconds": blobs["later_over_first_seconds"],
        "failover_completed_requests": failover.requests,
        "failover_failovers": failover.client_stats.get("failovers", 0),
        "lost": embedded.lost + fleet.lost + failover.lost,
        "duplicated": embedded.duplicated + fleet.duplicated + failover.duplicated,
        "ok": bool(ok),
    })
    print(json.dumps({"phase": "summary", **figures}), flush=True)
    return 0 if ok else 1


def write_plot(path: str, reports: dict[str, LoadReport]) -> None:
    """Request-latency summary per phase (p50/p95 bars): where the HTTP path adds time."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(reports)
    fig, ax = plt.subplots(figsize=(7, 3.5))
    p50 = [reports[n].request_latency_p50_s for n in names]
    p95 = [reports[n].request_latency_p95_s for n in names]
    xs = range(len(names))
    ax.bar([x - 0.2 for x in xs], p50, width=0.4, label="p50")
    ax.bar([x + 0.2 for x in xs], p95, width=0.4, label="p95")
    ax.set_xticks(list(xs), names)
    ax.set_ylabel("request latency (s), submit -> result")
    ax.set_title("sandbox load: embedded pool vs fleet vs failover")
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"wrote {path}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
