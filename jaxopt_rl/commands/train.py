"""`jaxopt-rl train --config FILE [key=value ...]`: a GRPO run (see `jaxopt_rl.training.loop`).

Every train config accepts `output_dir=DIR` and `steps=N`; a folder that already holds a
checkpoint resumes from its latest one (first log line: "resumed from step N of PATH").
"""

from __future__ import annotations

import argparse

HELP = "train a policy with GRPO against the sandbox and a reward environment"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="a configs/train/*.yaml file")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. steps=20 output_dir=runs/x rollout.group_size=4")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.training.config import load_train_config
    from jaxopt_rl.training.loop import train

    config = load_train_config(args.config, args.overrides)
    out = train(config)
    print(f"done: {config.steps} steps in {out} (metrics.jsonl, tensorboard/, checkpoints/, "
          "summary.md)")
    return 0
