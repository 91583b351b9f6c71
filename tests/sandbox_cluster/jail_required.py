"""What a test does when a jail backend cannot start here: skip, saying why (a developer's
laptop), or fail when `JAXOPT_REQUIRE_JAILS=1` (CI: `launch/local.sh test` sets it), so a jail
broken in CI is a failure, never a row of skips."""

from __future__ import annotations

import os
from typing import NoReturn

import pytest

REQUIRE_ENV = "JAXOPT_REQUIRE_JAILS"


def jails_required() -> bool:
    return os.environ.get(REQUIRE_ENV, "") == "1"


def no_jail(reason: str) -> NoReturn:
    """Skip with `reason`, or fail with it when jails are required."""
    if jails_required():
        pytest.fail(f"{reason} ({REQUIRE_ENV}=1: every jail backend must start here)",
                    pytrace=False)
    pytest.skip(reason)
