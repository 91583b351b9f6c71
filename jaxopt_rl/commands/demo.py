"""`jaxopt-rl demo [river] [--config FILE] [--smoke] [--fresh] [key=value ...]`.

Without `river`: the CPU demo, the README's main job (`jaxopt_rl.demo.pipeline`): from the
shipped SFT checkpoint, GRPO with QP-p30 timing rewards and with a correctness-only baseline,
then one shared replayed evaluation of the three policies, then runs/demo/report.md.
With `river`: the RiVER demo (`jaxopt_rl.demo.river`): RiVER against Raw-GRPO and Rank-uniform
on the shipped score tasks, several seeds, a held-out evaluation, runs/demo_river/report.md."""

from __future__ import annotations

import argparse

HELP = ("Run the CPU demo: train the tiny model with QP-p30 timing rewards and with "
        "correctness only, evaluate both against the SFT start, and report.")
DEFAULT_CONFIG = "configs/demo.yaml"
RIVER_CONFIG = "configs/demo_river.yaml"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", default=None,
                        help=f"demo config (default: the shipped {DEFAULT_CONFIG})")
    parser.add_argument("--smoke", action="store_true",
                        help="the same pipeline on a handful of steps and problems (CI)")
    parser.add_argument("--fresh", action="store_true",
                        help="delete the output folder first (default: resume what is there)")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. train.steps=10 output_dir=runs/demo2; "
                             f"a first word 'river' runs the RiVER demo ({RIVER_CONFIG})")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.config import project_path

    overrides = list(args.overrides)
    if overrides and overrides[0] == "river":
        return _run_river(args, overrides[1:])
    if overrides and "=" not in overrides[0]:
        raise ValueError(f"demo: {overrides[0]!r} is neither 'river' nor a key=value override")
    from jaxopt_rl.demo.config import load_demo_config
    from jaxopt_rl.demo.pipeline import run_demo
    from jaxopt_rl.demo.report import final_screen

    config = load_demo_config(args.config or project_path(DEFAULT_CONFIG), overrides,
                              smoke=args.smoke)
    paths, report = run_demo(config, fresh=args.fresh)
    print(final_screen(paths, report))
    return 0


def _run_river(args: argparse.Namespace, overrides: list[str]) -> int:
    from jaxopt_rl.config import project_path
    from jaxopt_rl.demo.river import run_river_demo
    from jaxopt_rl.demo.river_config import load_river_demo_config

    config = load_river_demo_config(args.config or project_path(RIVER_CONFIG), overrides,
                                    smoke=args.smoke)
    paths, _ = run_river_demo(config, fresh=args.fresh)
    print(paths["report_md"].read_text())
    print("written:")
    print("\n".join(f"  {key}  {path}" for key, path in paths.items()))
    return 0
