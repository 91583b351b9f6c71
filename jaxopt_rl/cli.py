"""`jaxopt-rl`: the command-line entry point. Thin: each subcommand lives in `jaxopt_rl.commands`.

A subcommand module exposes `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Modules are imported only when their command runs, so `jaxopt-rl --help` stays fast and a
broken optional dependency only breaks the commands that need it.

One override syntax: a command that takes config overrides takes them as `key=value` words
(dotted keys, e.g. `jaxopt-rl rewards --example --env qp_p30 ranking.ties=average`), before or
after its options (`jaxopt_rl.commands.split_overrides`). The `--set key=value` option of
earlier versions is refused with a line that shows the new form.

Failures: an expected one (`EXPECTED`: bad input, a corrupt checkpoint, a sandbox that cannot
start, a run stopped on purpose) is one line on stderr and exit status 2; any other exception
prints its traceback and a line saying it is a bug (exit status 1).
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback

from jaxopt_rl.commands import split_overrides
from jaxopt_rl.config import ConfigError
from jaxopt_rl.errors import ExpectedError, RunStopped
from jaxopt_rl.manifest import CheckpointError
from sandbox_cluster.client import SandboxUnavailable
from sandbox_cluster.jails.base import JailUnavailable
from sandbox_cluster.jails.cgroups import CgroupConflict

# What a user can cause and fix (a bad config key or value, a missing or malformed file, a
# corrupt checkpoint, a sandbox that cannot start here, a run that stopped for a reason it
# names): one line and exit status 2. The project's input checks raise ValueError subclasses
# (ConfigError, CheckpointError, RecordFileError, DumpError, ...); anything else is a bug.
EXPECTED = (ExpectedError, ValueError, FileNotFoundError, NotADirectoryError, PermissionError,
            JailUnavailable, CgroupConflict, SandboxUnavailable)


class _RemovedSet(argparse.Action):
    """`--set KEY=VALUE`, kept only to say what replaced it."""

    def __call__(self, parser, namespace, values, option_string=None):
        example = values or "key=value"
        parser.error(f"--set was removed: write the override as a bare word, {example} "
                     "(after the other arguments)")


# name -> module under jaxopt_rl.commands
COMMANDS = {
    "demo": "demo",
    "rewards": "rewards",
    "data": "data",
    "train": "train",
    "sft": "sft",
    "simulate": "simulate",
    "eval": "eval",
    "calibrate": "calibrate",
    "study": "study",
    "export": "export",
    "plan": "plan",
}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxopt-rl",
        description="Train code models with RL to write correct and fast programs.",
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        try:
            module = importlib.import_module(f"jaxopt_rl.commands.{module_name}")
        except ModuleNotFoundError as err:
            if err.name and err.name.startswith("jaxopt_rl.commands"):
                continue  # command not built yet
            raise
        sub = subparsers.add_parser(name, help=module.HELP, description=module.HELP)
        module.add_arguments(sub)
        sub.add_argument("--set", nargs="?", action=_RemovedSet, help=argparse.SUPPRESS)
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    # A nargs="*" positional takes one run of words only, so the overrides written after an
    # option (`--out x ranking.ties=average`) come back unparsed; they join the others here.
    args, unparsed = parser.parse_known_args(argv)
    unknown, overrides = split_overrides(unparsed)
    if unknown or (overrides and not hasattr(args, "overrides")):
        parser.error(f"unrecognized arguments: {' '.join(unparsed)}")
    if overrides:
        args.overrides = [*args.overrides, *overrides]
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except EXPECTED as err:
        print(f"jaxopt-rl {args.command}: {_kind(err)}: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"jaxopt-rl {args.command}: interrupted", file=sys.stderr)
        return 130
    except Exception:
        traceback.print_exc()
        print(f"jaxopt-rl {args.command}: unexpected error: this is a bug; please report it with "
              "the traceback above", file=sys.stderr)
        return 1


def _kind(err: BaseException) -> str:
    """The word before the message: what kind of expected failure this is."""
    if isinstance(err, ConfigError):
        return "config error"
    if isinstance(err, CheckpointError):
        return "checkpoint error"
    if isinstance(err, RunStopped):
        return "run stopped"
    if isinstance(err, JailUnavailable | CgroupConflict | SandboxUnavailable):
        return "sandbox unavailable"
    return "error"

if __name__ == "__main__":
    sys.exit(main())
