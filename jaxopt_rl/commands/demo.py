"""`jaxopt-rl demo [--config FILE] [--smoke] [--fresh] [key=value ...]`: the CPU demo, the
README's main job (`jaxopt_rl.demo.pipeline`): from the shipped SFT checkpoint, GRPO with QP-p30
timing rewards and with a correctness-only baseline, then one shared replayed evaluation of the
three policies, then runs/demo/report.md."""

from __future__ import annotations

import argparse

HELP = ("Run the CPU demo: train the tiny model with QP-p30 timing rewards and with "
        "correctness only, evaluate both against the SFT start, and report.")
DEFAULT_CONFIG = "configs/demo.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None,
                        help=f"demo config (default: the shipped {DEFAULT_CONFIG})")
    parser.add_argument("--smoke", action="store_true",
                        help="the same pipeline on a handful of steps and problems (CI)")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the output folder first (default: resume what is there)")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. train.steps=10 output_dir=runs/demo2")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.config import project_path
    from jaxopt_rl.demo.config import load_demo_config
    from jaxopt_rl.demo.pipeline import run_demo
    from jaxopt_rl.demo.report import final_screen

    config = load_demo_config(args.config or project_path(DEFAULT_CONFIG), args.overrides,
                              smoke=args.smoke)
    paths, report = run_demo(config, fresh=args.fresh)
    print(final_screen(paths, report))
    return 0
