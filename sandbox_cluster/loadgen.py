"""Load generator: many concurrent clients, every result checked for loss, duplication, mix-ups.

Each of `clients` threads owns its own client (`connect(urls)`, or a shared embedded pool) and
keeps `requests_per_client` requests in flight, each running an echo program on
`tests_per_request` tests whose inputs are unique (`"<client>:<request>:<test>"`). Since the
program echoes its input, every result says which test it belongs to, so the report can prove:

    lost        tests that never got a result (or a result without its own echo)
    duplicated  echoes that came back more than once
    mismatched  results whose echo belongs to another test (crossed wires)
    inconclusive infra_error results (counted, not lost: they carry no verdict)

`sandbox-cluster load URL...` and `benchmarks/sandbox_load.py` print the report as JSON;
`tests/sandbox_cluster/test_load.py` asserts on it. Standard library only.
"""

from __future__ import annotations

import collections
import statistics
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from sandbox_cluster.api import Limits, Status, TestCase

ECHO_PROGRAM = "import sys\nsys.stdout.write(sys.stdin.read())\n"
LOAD_LIMITS = Limits(time_s=5.0)


@dataclass
class LoadReport:
    clients: int
    requests: int
    executions: int  # tests that got a result
    seconds: float
    lost: int
    duplicated: int
    mismatched: int
    inconclusive: int
    statuses: dict[str, int]
    nodes: dict[str, int]  # results per node (provenance)
    request_latency_p50_s: float
    request_latency_p95_s: float
    client_stats: dict[str, int] = field(default_factory=dict)

    @property
    def executions_per_s(self) -> float:
        return self.executions / self.seconds if self.seconds else 0.0

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "executions_per_s": round(self.executions_per_s, 2)}


def echo_tests_for(client: int, request: int, n_tests: int) -> list[TestCase]:
    return [TestCase(f"{client}:{request}:{t}\n", f"{client}:{request}:{t}\n")
            for t in range(n_tests)]


def run_load(urls: Sequence[str] | None, clients: int = 8, requests_per_client: int = 25,
             tests_per_request: int = 25, limits: Limits = LOAD_LIMITS,
             pool: Any = None, on_request_done: Callable[[int], None] | None = None,
             progress: bool = False, **connect_options: Any) -> LoadReport:
    """Drive the load and check every result. `pool` is a shared embedded pool (urls=None)."""
    from sandbox_cluster.connecting import connect

    lock = threading.Lock()
    echoes: collections.Counter[str] = collections.Counter()
    arrivals: collections.Counter[tuple[int, int, int]] = collections.Counter()
    statuses: collections.Counter[str] = collections.Counter()
    nodes: collections.Counter[str] = collections.Counter()
    client_stats: collections.Counter[str] = collections.Counter()
    latencies: list[float] = []
    counts = {"done": 0, "results": 0, "mismatched": 0, "inconclusive": 0}
    total_requests = clients * requests_per_client
    errors: list[BaseException] = []

    def one_client(c: int) -> None:
        options = dict(connect_options)
        if urls is None:
            options["pool"] = pool
        with connect(None if urls is None else list(urls), **options) as sb:
            futures = []
            for r in range(requests_per_client):
                started = time.monotonic()
                future = sb.submit(ECHO_PROGRAM, echo_tests_for(c, r, tests_per_request), limits)
                future.add_done_callback(lambda f, c=c, r=r, s=started: record(f, c, r, s))
                futures.append(future)
            for future in futures:
                future.exception()  # wait; record() has seen it
            with lock:
                client_stats.update(sb.stats())

    def record(future, c: int, r: int, started: float) -> None:
        with lock:
            latencies.append(time.monotonic() - started)
            counts["done"] += 1
            done = counts["done"]
            if future.exception() is not None:
                errors.append(future.exception())
                return
            results = future.result()
            counts["results"] += len(results)
            for t, result in enumerate(results):
                arrivals[(c, r, t)] += 1
                statuses[result.status.value] += 1
                nodes[str(result.extra.get("node"))] += 1
                if result.status is Status.INFRA_ERROR:
                    counts["inconclusive"] += 1
                    continue
                echo = (result.stdout or b"").decode("utf-8", "replace")
                echoes[echo] += 1
                if echo != f"{c}:{r}:{t}\n":
                    counts["mismatched"] += 1
        if on_request_done is not None:
            on_request_done(done)
        if progress and (done % max(1, total_requests // 20) == 0 or done == total_requests):
            print(f"\rload: {done}/{total_requests} requests", end="", file=sys.stderr,
                  flush=True)

    started = time.monotonic()
    threads = [threading.Thread(target=one_client, args=(c,), name=f"load-client-{c}")
               for c in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    seconds = time.monotonic() - started
    if progress:
        print(file=sys.stderr)
    if errors:
        raise RuntimeError(f"{len(errors)} requests raised; first: {errors[0]!r}") from errors[0]
    expected = [(c, r, t) for c in range(clients) for r in range(requests_per_client)
                for t in range(tests_per_request)]
    ordered = sorted(latencies)
    return LoadReport(
        clients=clients, requests=counts["done"], executions=counts["results"],
        seconds=round(seconds, 3),
        lost=sum(1 for key in expected if arrivals[key] == 0),
        duplicated=sum(n - 1 for n in (*arrivals.values(), *echoes.values()) if n > 1),
        mismatched=counts["mismatched"],
        inconclusive=counts["inconclusive"], statuses=dict(statuses), nodes=dict(nodes),
        request_latency_p50_s=round(statistics.median(ordered), 4) if ordered else 0.0,
        request_latency_p95_s=round(ordered[int(0.95 * (len(ordered) - 1))], 4)
        if ordered else 0.0,
        client_stats=dict(client_stats))
