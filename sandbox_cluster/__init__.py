"""sandbox_cluster: run untrusted programs on tests in a jail and time each test precisely.

Standard library only (plus the nsjail binary): sandbox nodes install and run without JAX.

    from sandbox_cluster import connect, TestCase, Limits, Status
    sb = connect()                     # embedded local pool; connect([url, ...]) for a fleet
    results = sb.run(program, [TestCase("1 2\n", "3\n")], Limits(time_s=2))
    sb.close()
"""

from sandbox_cluster.api import Limits, Status, TestCase, TestResult

__all__ = ["Limits", "SandboxRequestError", "SandboxUnavailable", "Status", "TestCase",
           "TestResult", "connect"]


def connect(urls=None, **options):
    """Embedded in-process pool when `urls` is None, else a client of a sandbox fleet."""
    from sandbox_cluster.connecting import connect as _connect

    return _connect(urls, **options)


def __getattr__(name):
    # The client (threads, HTTP) loads on first use, not when a node imports the API types.
    if name in ("SandboxRequestError", "SandboxUnavailable"):
        from sandbox_cluster import client

        return getattr(client, name)
    raise AttributeError(f"module 'sandbox_cluster' has no attribute {name!r}")
