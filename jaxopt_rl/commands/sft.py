"""`jaxopt-rl sft --config FILE [key=value ...]`: the supervised warm start (`training.sft`)."""

from __future__ import annotations

import argparse

HELP = "supervised warm start on the data set's correct reference solutions"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="a configs/sft/*.yaml file")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. steps=50 output_dir=runs/sft")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.sft import run_sft

    config = load_train_config(args.config, args.overrides)
    out = run_sft(config)
    print(f"done: {config.steps} steps in {out}; weights for init_from: {out / 'hf'}")
    return 0
