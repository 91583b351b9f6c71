"""The failures a user should see as one line, not a traceback.

`ExpectedError` marks an exception class whose message says what went wrong and what to do
(a bad config key, a corrupt checkpoint, a malformed record file, a run that stopped for a
reason it names): `jaxopt-rl` prints it as one line and exits with status 2. Any other
exception is a bug: the CLI prints its traceback and says so.
"""

from __future__ import annotations


class ExpectedError(Exception):
    """Base (or mixin) of the exceptions the CLI reports as one line, exit status 2."""


class RunStopped(ExpectedError, RuntimeError):
    """A training run stopped on purpose, for the reason its message gives (no learning
    signal in any arriving group, parameters that turned non-finite, ...)."""
