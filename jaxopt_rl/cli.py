"""`jaxopt-rl`: the command-line entry point. Thin: each subcommand lives in `jaxopt_rl.commands`.

A subcommand module exposes `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Modules are imported only when their command runs, so `jaxopt-rl --help` stays fast and a
broken optional dependency only breaks the commands that need it.

One override syntax: a command that takes config overrides takes them as `key=value` words
(dotted keys, e.g. `jaxopt-rl rewards --example --env qp_p30 ranking.ties=average`), before or
after its options (`jaxopt_rl.commands.split_overrides`). The `--set key=value` option of
earlier versions is refused with a line that shows the new form.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jaxopt_rl.commands import split_overrides
from jaxopt_rl.config import ConfigError
from jaxopt_rl.manifest import CheckpointError


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
    except ConfigError as err:
        print(f"jaxopt-rl {args.command}: config error: {err}", file=sys.stderr)
        return 2
    except CheckpointError as err:
        print(f"jaxopt-rl {args.command}: checkpoint error: {err}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as err:
        print(f"jaxopt-rl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
