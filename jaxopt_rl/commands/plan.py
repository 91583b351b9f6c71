"""`jaxopt-rl plan --config FILE [--topology NAME | --gpu NAME] [--json OUT] [key=value ...]`:
compile a run's train step and sampler for an accelerator slice on this host, without the
accelerator, and say whether they fit (`jaxopt_rl.planning.plan`).

Without `--topology` / `--gpu` the config's `target.topology` is planned (`--gpu` alone: its
`target.gpu` when given no name). Exit status: 0 when both parts fit with at least 10 % of
HBM to spare on every chip, 1 when one does not (the largest buffers of the part that does not
fit are printed), 2 on a bad config, slice name or missing compiler.

Needs the compiler of the platform: libtpu (``pip install -e '.[aot-tpu]'``) for TPU slices,
the CUDA plugin (``pip install -e '.[aot-gpu]'``) for GPU nodes. Both compile on a CPU host;
nothing runs on an accelerator, and memory figures are the compiler's, the rest projections.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

HELP = "compile the train step and sampler for a TPU slice or GPU nodes, and check they fit"
_GiB = 2**30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", required=True, help="a configs/train/*.yaml file")
    parser.add_argument("--topology", help="TPU slice, e.g. v5p-32, v5e-64, v6e-16 "
                        "(default: the config's target.topology)")
    parser.add_argument("--gpu", nargs="?", const="", help="GPU nodes, e.g. h100x16 or h200x8 "
                        "(alone: the config's target.gpu)")
    parser.add_argument("--json", type=Path, help="also write the plan as JSON here")
    parser.add_argument("overrides", nargs="*", metavar="key=value",
                        help="config overrides, e.g. grpo.horizon=4096 model.remat=none")


def run(args: argparse.Namespace) -> int:
    # compile-only: no backend but the host's CPU is ever started
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    from jaxopt_rl.config import ConfigError
    from jaxopt_rl.planning.hardware import MissingToolchain, parse_slice
    from jaxopt_rl.planning.plan import plan_run
    from jaxopt_rl.training.config import load_train_config

    config = load_train_config(args.config, args.overrides)
    if args.topology and args.gpu is not None:
        raise ConfigError("give --topology or --gpu, not both")
    if args.gpu is not None:
        name, key = args.gpu or config.target.gpu, "target.gpu"
    else:
        name, key = args.topology or config.target.topology, "target.topology"
    if not name:
        raise ConfigError(f"{key}: {args.config} names no target; pass --topology or --gpu")
    try:
        slice_ = parse_slice(name)
    except ValueError as error:
        raise ConfigError(f"{key}: {error}") from None
    try:
        result = plan_run(config, slice_, log=lambda line: print(line, file=sys.stderr))
    except MissingToolchain as error:
        print(f"jaxopt-rl plan: {error}", file=sys.stderr)
        return 2
    result["config"] = str(args.config)
    print(render(result))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0 if result["fits"] else 1


def render(plan: dict) -> str:
    """The plan as a few lines a person reads (the JSON has every figure)."""
    hbm = plan["hbm_per_chip_bytes"]
    lines = [f"{plan['config']} on {plan['topology']}: {plan['chips']} chips of "
             f"{hbm / _GiB:.2f} GiB HBM, mesh {plan['mesh']}"
             + (f" (train step), rollout mesh {plan['rollout_mesh']} (sampler; each weight "
                f"copy moves {plan['weight_transfer_bytes'] / _GiB:.2f} GiB between them)"
                if plan.get("rollout_mesh") else "")]
    for name in ("train", "sampler"):
        part = plan[name]
        verdict = "fits" if part["fits"] else "DOES NOT FIT"
        lines.append(
            f"  {name:7s} {verdict}: peak {part['peak_bytes'] / _GiB:.2f} GiB per chip "
            f"(arguments {part['argument_bytes'] / _GiB:.2f} + temporaries "
            f"{part['temp_bytes'] / _GiB:.2f} + outputs {part['output_bytes'] / _GiB:.2f} - "
            f"aliased {part['alias_bytes'] / _GiB:.2f}), headroom {part['headroom']:.0%}; "
            f"compiled in {part['compile_s']:.0f} s")
        if name == "train":
            lines.append(
                f"          projection: {part['flops'] / 1e15:.1f} PFLOP a step "
                f"({part['model_flops'] / 1e15:.1f} of model FLOPs over {part['tokens']:,} "
                f"tokens), roofline {part['roofline_s']:.2f} s, MFU {part['projected_mfu']:.0%}"
                " (no collectives, kernels at peak)")
            if part.get("replicated_dims"):
                lines.append("          replicated (mesh axes do not divide them): "
                             + "; ".join(part["replicated_dims"]))
        else:
            lines.append(
                f"          projection: {part['rows']} rows, decode roofline "
                f"{part['decode_roofline_s'] * 1e3:.1f} ms a token, "
                f"{part['tokens_per_s_per_chip']:.0f} tokens/s per chip "
                f"(largest call: {part['largest_call']})")
        if not part["fits"]:
            lines.append("          largest buffers:")
            lines += [f"            {buffer}" for buffer in part["largest_buffers"]]
    lines.append("memory: the compiler's figures; times, FLOPs and MFU: projections, not "
                 "measurements")
    return "\n".join(lines)
