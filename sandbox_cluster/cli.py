"""`sandbox-cluster`: serve a sandbox node, check nodes' health, run one program by hand.

    sandbox-cluster serve [--host 127.0.0.1] [--port 8000] [--slots N] [--cores 2-15] ...
    sandbox-cluster health http://h1:8000 [http://h2:8000 ...]
    sandbox-cluster run solution.py --input-text "1 2" --expected-text "3" [--url URL ...]
    sandbox-cluster load [URL ...] [--clients 8 --requests 25 --tests 25]   # fleet smoke test

The bearer token is read from `--token-file` or `$SANDBOX_CLUSTER_TOKEN`, never from the command
line (it would show in `ps`). `serve` refuses a non-loopback `--host` without one. On SIGTERM
or SIGINT `serve` drains: /health turns 503 so balancers stop routing, running executions
finish (up to `--drain-timeout-s`), then the process exits 0.

Exit codes: 0 ok; 1 a node is unhealthy / a test did not succeed / the load test lost,
duplicated or mixed up a result; 2 bad usage or config.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import signal
import sys
import threading
import urllib.error
import urllib.request
from pathlib import Path

from sandbox_cluster.api import Limits, Status, TestCase
from sandbox_cluster.client import TOKEN_ENV

MIB = 1 << 20


def _parse_cores(text: str) -> list[int]:
    """"0,2,4-7" -> [0, 2, 4, 5, 6, 7]."""
    cores: list[int] = []
    try:
        for part in text.split(","):
            low, _, high = part.strip().partition("-")
            cores += range(int(low), int(high or low) + 1)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"--cores: expected a list like 0,2,4-7, got {text!r}") from None
    return cores


def _read_token(path: str | None) -> str | None:
    if path:
        try:
            token = Path(path).read_text().strip()
        except OSError as err:
            raise SystemExit(f"sandbox-cluster: cannot read --token-file {path}: {err}") from err
        if not token:
            raise SystemExit(f"sandbox-cluster: --token-file {path} is empty")
        return token
    return os.environ.get(TOKEN_ENV) or None


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sandbox-cluster", description=__doc__.split("\n")[0])
    parser.add_argument("--log-level", default="info",
                        choices=["debug", "info", "warning", "error"])
    commands = parser.add_subparsers(dest="command", required=True)

    serve = commands.add_parser("serve", help="serve this machine's pool over HTTP (API v1)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="bind address (non-loopback needs a token; default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=8000, help="0 picks a free port")
    serve.add_argument("--slots", type=int, default=None,
                       help="execution slots (default: one per core in --cores)")
    serve.add_argument("--cores", type=_parse_cores, default=None,
                       help="CPU cores for the slots, e.g. 2-15 (default: all usable)")
    serve.add_argument("--reserve-cores", type=int, default=0,
                       help="keep the first N usable cores for the HTTP server and supervisor "
                            "(slots use the rest; with --cores, the N cores not in --cores)")
    serve.add_argument("--backend", choices=["nsjail", "bwrap"], default=None,
                       help="jail backend (default: the best available)")
    serve.add_argument("--queue-limit", type=int, default=None,
                       help="requests that may wait for a slot before 429 (default 4 x slots)")
    serve.add_argument("--token-file", help=f"bearer token file (or ${TOKEN_ENV})")
    serve.add_argument("--blob-dir", default=None,
                       help="blob store directory (default: a temporary directory)")
    serve.add_argument("--blob-budget-mb", type=int, default=4096)
    serve.add_argument("--max-blob-mb", type=int, default=1024)
    serve.add_argument("--max-body-mb", type=int, default=256)
    serve.add_argument("--max-tests", type=int, default=4096, help="tests per request")
    serve.add_argument("--drain-timeout-s", type=float, default=60.0)
    serve.add_argument("--socket-timeout-s", type=float, default=30.0,
                       help="close a connection idle or stalled this long")
    serve.add_argument("--max-connections", type=int, default=256,
                       help="open connections served at once; beyond, 503 and close")
    serve.add_argument("--header-timeout-s", type=float, default=10.0,
                       help="close a connection whose request line and headers are not all "
                            "in this long after the server starts waiting for them")
    serve.add_argument("--max-connections-per-client", type=int, default=None,
                       help="open connections one client address may hold; beyond, 429 and "
                            "close (default: all but a quarter of --max-connections)")
    serve.add_argument("--node-name", default=None, help="name in replies (default host:port)")

    health = commands.add_parser("health", help="print each node's /health; exit 1 if any "
                                 "is not ok")
    health.add_argument("urls", nargs="+")
    health.add_argument("--token-file")
    health.add_argument("--timeout-s", type=float, default=5.0)

    run = commands.add_parser("run", help="run one program on a few tests (embedded pool, or "
                              "a fleet with --url) and print the verdicts")
    run.add_argument("program", help="path to a Python program")
    run.add_argument("--input", action="append", default=[], metavar="FILE",
                     help="a test input file (repeatable; '-' for stdin)")
    run.add_argument("--input-text", action="append", default=[], metavar="TEXT")
    run.add_argument("--expected", action="append", default=[], metavar="FILE",
                     help="expected output per --input, in order")
    run.add_argument("--expected-text", action="append", default=[], metavar="TEXT")
    run.add_argument("--url", action="append", default=None, help="fleet node (repeatable)")
    run.add_argument("--token-file")
    run.add_argument("--time-s", type=float, default=10.0)
    run.add_argument("--memory-mb", type=int, default=1024)
    run.add_argument("--repeats", type=int, default=1)
    run.add_argument("--interface", choices=["stdio", "function"], default="stdio")
    run.add_argument("--checker", help="checker source file (check(input, output, expected))")
    run.add_argument("--backend", choices=["nsjail", "bwrap"], default=None)
    run.add_argument("--json", action="store_true", help="print results as JSON lines")

    load = commands.add_parser("load", help="drive concurrent echo requests and check that no "
                               "result is lost, duplicated or mixed up; prints JSON")
    load.add_argument("urls", nargs="*", help="fleet nodes (none: an embedded pool)")
    load.add_argument("--clients", type=int, default=8)
    load.add_argument("--requests", type=int, default=25, help="requests per client")
    load.add_argument("--tests", type=int, default=25, help="tests per request")
    load.add_argument("--time-s", type=float, default=5.0)
    load.add_argument("--token-file")
    return parser


def cmd_load(args: argparse.Namespace) -> int:
    from sandbox_cluster.loadgen import run_load

    if min(args.clients, args.requests, args.tests) < 1:
        print("sandbox-cluster load: --clients, --requests and --tests must be >= 1",
              file=sys.stderr)
        return 2
    limits = Limits(time_s=args.time_s)
    shape = {"clients": args.clients, "requests_per_client": args.requests,
             "tests_per_request": args.tests, "limits": limits, "progress": True}
    if args.urls:
        report = run_load(args.urls, token=_read_token(args.token_file), **shape)
    else:
        from sandbox_cluster.pool import LocalPool

        with LocalPool() as pool:
            report = run_load(None, pool=pool, **shape)
    print(json.dumps(report.to_json(), sort_keys=True))
    clean = report.lost == report.duplicated == report.mismatched == 0
    return 0 if clean and report.statuses == {"success": report.executions} else 1


def _split_cores(cores: list[int] | None, reserve: int) -> tuple[list[int], list[int]]:
    """(slot cores, server cores). Reserved cores never run programs, so the HTTP server and
    the supervisors do not steal time from the timed runs (docs/design/sandbox-timing.md §1.3: no
    implicit sharing)."""
    usable = sorted(os.sched_getaffinity(0))
    if reserve < 0:
        raise ValueError(f"--reserve-cores must be >= 0, got {reserve}")
    if cores is None:
        if reserve >= len(usable):
            raise ValueError(f"--reserve-cores {reserve} leaves no core for slots "
                             f"(usable: {_format_cores(usable)})")
        return usable[reserve:], usable[:reserve]
    outside = [c for c in usable if c not in cores]
    if reserve > len(outside):
        raise ValueError(f"--reserve-cores {reserve}: only {len(outside)} usable cores are "
                         f"outside --cores {_format_cores(cores)}")
    return list(cores), outside[:reserve]


def _format_cores(cores: list[int]) -> str:
    return ",".join(map(str, cores))


def _pin_process(cpus: list[int]) -> None:
    """Move every thread of this process (and so its future children) onto `cpus`; jails
    re-pin themselves to their slot's core."""
    for task in os.listdir("/proc/self/task"):
        with contextlib.suppress(OSError):  # a thread that just exited
            os.sched_setaffinity(int(task), cpus)


def cmd_serve(args: argparse.Namespace) -> int:
    from sandbox_cluster.pool import LocalPool
    from sandbox_cluster.server import SandboxServer, ServerConfig

    token = _read_token(args.token_file)
    try:
        config = ServerConfig(
            host=args.host, port=args.port, token=token,
            max_body_bytes=args.max_body_mb * MIB, max_tests_per_request=args.max_tests,
            blob_dir=args.blob_dir, blob_budget_bytes=args.blob_budget_mb * MIB,
            max_blob_bytes=args.max_blob_mb * MIB, node_name=args.node_name,
            socket_timeout_s=args.socket_timeout_s, max_connections=args.max_connections,
            header_timeout_s=args.header_timeout_s,
            max_connections_per_client=args.max_connections_per_client)
    except ValueError as err:
        print(f"sandbox-cluster serve: {err}", file=sys.stderr)
        return 2
    try:
        cores, reserved = _split_cores(args.cores, args.reserve_cores)
    except ValueError as err:
        print(f"sandbox-cluster serve: {err}", file=sys.stderr)
        return 2
    slots = args.slots or len(cores)
    queue_limit = args.queue_limit if args.queue_limit is not None else 4 * slots
    try:
        pool = LocalPool(slots=slots, backend=args.backend, cores=cores,
                         queue_limit=queue_limit)
    except (ValueError, RuntimeError, OSError) as err:
        print(f"sandbox-cluster serve: cannot start the pool: {err}", file=sys.stderr)
        return 2
    if reserved:
        _pin_process(reserved)
    try:
        server = SandboxServer(pool, config)
    except OSError as err:
        pool.close()
        print(f"sandbox-cluster serve: cannot bind {args.host}:{args.port}: {err}",
              file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    server.start()
    stats = pool.stats()
    print(f"sandbox-cluster serving {server.url} node={server.node} slots={stats['slots']} "
          f"cores={_format_cores(cores)} server_cores={_format_cores(reserved) or 'shared'} "
          f"backend={stats['backend']} queue_limit={queue_limit} auth={token is not None} "
          f"degraded={sorted(stats.get('degraded') or [])}", flush=True)
    stop.wait()
    print("sandbox-cluster: draining", flush=True)
    drained = server.drain(args.drain_timeout_s)
    server.close()
    pool.close()
    print(f"sandbox-cluster: stopped ({'drained' if drained else 'drain timed out'})",
          flush=True)
    return 0


def cmd_health(args: argparse.Namespace) -> int:
    token = _read_token(args.token_file)
    all_ok = True
    for url in args.urls:
        request = urllib.request.Request(url.rstrip("/") + "/health")
        if token:
            request.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(request, timeout=args.timeout_s) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as err:
            body = {"status": f"http {err.code}", "detail": err.read(300).decode("utf-8",
                                                                                  "replace")}
        except (urllib.error.URLError, OSError, ValueError) as err:
            body = {"status": "unreachable", "detail": str(err)}
        all_ok &= body.get("status") == "ok"
        print(json.dumps({"url": url, **body}, sort_keys=True))
    return 0 if all_ok else 1


def _read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text()
    except OSError as err:
        raise SystemExit(f"sandbox-cluster run: cannot read {path}: {err}") from err


def cmd_run(args: argparse.Namespace) -> int:
    from sandbox_cluster.client import SandboxRequestError, SandboxUnavailable
    from sandbox_cluster.connecting import connect

    program = _read_text(args.program)
    inputs = [_read_text(p) for p in args.input] + list(args.input_text)
    expected = [_read_text(p) for p in args.expected] + list(args.expected_text)
    if not inputs:
        print("sandbox-cluster run: give at least one --input or --input-text", file=sys.stderr)
        return 2
    if expected and len(expected) != len(inputs):
        print(f"sandbox-cluster run: {len(expected)} expected outputs for {len(inputs)} inputs",
              file=sys.stderr)
        return 2
    tests = [TestCase(i, expected[k] if expected else None) for k, i in enumerate(inputs)]
    try:
        limits = Limits(time_s=args.time_s, memory_mb=args.memory_mb, repeats=args.repeats)
    except ValueError as err:
        print(f"sandbox-cluster run: {err}", file=sys.stderr)
        return 2
    checker = _read_text(args.checker) if args.checker else None
    if args.url:
        try:
            sb = connect(args.url, token=_read_token(args.token_file))
        except SandboxUnavailable as err:
            print(f"sandbox-cluster run: {err}", file=sys.stderr)
            return 2
    else:
        sb = connect(backend=args.backend, slots=1)
    try:
        results = sb.run(program, tests, limits, interface=args.interface, checker=checker)
    except SandboxRequestError as err:
        print(f"sandbox-cluster run: {err}", file=sys.stderr)
        return 2
    finally:
        sb.close()
    for k, result in enumerate(results):
        if args.json:
            print(json.dumps({"test": k, **result.to_json()}))
            continue
        out = (result.stdout or b"").decode("utf-8", "replace").strip().replace("\n", " ")
        print(f"test {k}: {result.status.value:<13} {result.duration_s * 1000:9.2f} ms  "
              f"out={out[:60]!r}" + (f"  detail={result.detail!r}" if result.detail else ""))
    return 0 if all(r.status is Status.SUCCESS for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(),
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    handlers = {"serve": cmd_serve, "health": cmd_health, "run": cmd_run, "load": cmd_load}
    return handlers[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
