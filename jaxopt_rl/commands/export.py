"""`jaxopt-rl export CHECKPOINT OUT`: write a training checkpoint as a Hugging Face folder.

    jaxopt-rl export runs/tiny_qp_p30 /tmp/hf-tiny            # the run's latest checkpoint
    jaxopt-rl export runs/tiny_qp_p30/checkpoints/200 /tmp/hf  # one step
    jaxopt-rl export runs/tiny_qp_p30 /tmp/hf --step 100
    jaxopt-rl export runs/sft_tiny_mini jaxopt_rl/demo/assets/sft_tiny --dtype bfloat16

CHECKPOINT is a run folder, its ``checkpoints/`` folder or one step folder; the architecture
comes from the resolved config saved in the checkpoint. Writes ``config.json`` and
``model.safetensors`` (sharded above 5 GB) through `jaxopt_rl.model.save_pretrained`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "Write a training checkpoint as a Hugging Face model folder."


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("checkpoint", type=Path, help="run folder, checkpoints/ or a step folder")
    parser.add_argument("out", type=Path, help="output folder (config.json + safetensors)")
    parser.add_argument("--step", type=int, help="step to export (default: the latest)")
    parser.add_argument("--dtype", choices=("float32", "bfloat16"),
                        help="cast the saved tensors (default: as trained)")


def run(args: argparse.Namespace) -> int:
    from jaxopt_rl.training.checkpoints import export_pretrained

    folder = export_pretrained(args.checkpoint, args.out, args.step, args.dtype)
    print(f"wrote {folder}")
    return 0
