"""`jaxopt-rl`: the command-line entry point. Thin: each subcommand lives in `jaxopt_rl.commands`.

A subcommand module exposes `HELP` (one line), `add_arguments(parser)` and `run(args) -> int`.
Modules are imported only when their command runs, so `jaxopt-rl --help` stays fast and a
broken optional dependency only breaks the commands that need it.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from jaxopt_rl.config import ConfigError

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
        sub.set_defaults(handler=module.run)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except ConfigError as err:
        print(f"jaxopt-rl {args.command}: config error: {err}", file=sys.stderr)
        return 2
    except (ValueError, FileNotFoundError) as err:
        print(f"jaxopt-rl {args.command}: error: {err}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
