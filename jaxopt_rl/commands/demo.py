"""`jaxopt-rl demo`: the CPU demo (the README's main job)."""

HELP = "Run the CPU demo: reward kernels on the shipped example execution records."


def add_arguments(parser) -> None:
    parser.add_argument("--env", default="qp_p30", help="environment config name or path")


def run(args) -> int:
    from jaxopt_rl.commands import rewards as rewards_command

    return rewards_command.run_on_example(args.env)
