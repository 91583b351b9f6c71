#!/usr/bin/env bash
# Every accelerator figure the issues ask for, in one run (< 8 minutes on one H200):
#   1. train-step MFU of the ~0.5B Qwen2 architecture, bfloat16 compute (benchmarks/train_step.py)
#   2. sampler tokens/s and fraction of HBM bandwidth, ~0.5B bf16, batch 64 (sampler_bandwidth.py)
# Run from the repository root on the device machine: bash benchmarks/device_check.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
export PYTHONPATH=.
echo "== train step (MFU)"
timeout 240 "$PY" benchmarks/train_step.py --model benchmarks/qwen2_0p5b.yaml --dtype bfloat16 \
  --rows 8 --horizon 4096 --microbatches 4 --repeats 3 --lock ''
echo "== sampler bandwidth"
timeout 180 "$PY" benchmarks/sampler_bandwidth.py --model benchmarks/qwen2_0p5b.yaml --batch 64 \
  --prompt-len 512 --new-tokens 256 --peak-gbs 4800
