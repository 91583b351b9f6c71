"""`connect()`: the one way callers get a sandbox client, an embedded pool's or a fleet's.

It lives apart from `client` (the shared client pipeline) and `fleet` (the HTTP client of a
fleet, a subclass of it) so that neither imports the other back: client <- fleet <- connecting.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Sequence
from typing import Any

from sandbox_cluster.client import TOKEN_ENV, ClientOptions, EmbeddedClient, SandboxClient

_POOL_OPTIONS = ("slots", "backend", "cores", "queue_limit")  # connect()'s options of a LocalPool


def _split_options(options: dict[str, Any]) -> tuple[ClientOptions, dict[str, Any], dict]:
    known = {f.name for f in dataclasses.fields(ClientOptions)}
    pool_kwargs = {k: options.pop(k) for k in _POOL_OPTIONS if k in options}
    extras = {k: options.pop(k) for k in ("pool", "fallback_pool") if k in options}
    unknown = sorted(set(options) - known)
    if unknown:
        raise TypeError(f"connect(): unknown option {unknown[0]!r} (known: "
                        f"{', '.join(sorted(known | set(_POOL_OPTIONS)))}, pool, fallback_pool)")
    return ClientOptions(**options), pool_kwargs, extras


def connect(urls: str | Sequence[str] | None = None, **options: Any) -> SandboxClient:
    """An embedded pool client (`urls=None`) or a fleet client over `urls`.

    Options: the `ClientOptions` fields; for the embedded pool also `slots`, `backend`,
    `cores`, `queue_limit` (passed to `LocalPool`) or `pool=` an existing pool object; for a
    fleet `fallback_pool=` a pool used for local fallback (default: a LocalPool started on
    first use).
    """
    client_options, pool_kwargs, extras = _split_options(dict(options))
    if urls is None:
        if client_options.fallback != "none":
            raise ValueError("connect(): fallback='local' needs a fleet (urls); the embedded "
                             "pool already runs locally")
        if "fallback_pool" in extras:
            raise ValueError("connect(): fallback_pool needs a fleet (urls)")
        if "pool" in extras:
            if pool_kwargs:
                raise ValueError(f"connect(): pass either pool= or {sorted(pool_kwargs)}")
            return EmbeddedClient(extras["pool"], client_options, owns_pool=False)
        from sandbox_cluster.pool import LocalPool

        return EmbeddedClient(LocalPool(**pool_kwargs), client_options, owns_pool=True)
    if pool_kwargs or "pool" in extras:
        raise ValueError("connect(): pool options apply to the embedded pool only "
                         f"(got {sorted(pool_kwargs) or ['pool']} with urls)")
    if isinstance(urls, str):
        urls = [u for u in urls.split(",") if u.strip()]
    if client_options.token is None and os.environ.get(TOKEN_ENV):
        client_options = dataclasses.replace(client_options, token=os.environ[TOKEN_ENV])
    from sandbox_cluster.fleet import FleetClient  # (loads the HTTP machinery on first use)

    return FleetClient(list(urls), client_options, fallback_pool=extras.get("fallback_pool"))
