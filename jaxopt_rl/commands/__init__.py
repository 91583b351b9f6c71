"""Subcommands of `jaxopt-rl`; each module: `HELP`, `add_arguments(parser)`, `run(args) -> int`."""
