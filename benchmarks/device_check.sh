#!/usr/bin/env bash
# Every accelerator figure the issues ask for, in one run (< 8 minutes on one H200), each
# measurement printed beside `jaxopt-rl plan`'s prediction for the same program:
#   0. plan: the ~1.5B Qwen2 train step and sampler compiled for one GPU of this kind without
#      running them (benchmarks/device_check.yaml): peak memory (the compiler's) and the
#      projected MFU and decode rate (projections)
#   1. train-step MFU and peak device memory, same model and batch, bfloat16 compute
#      (benchmarks/train_step.py)
#   2. sampler tokens/s and fraction of HBM bandwidth, same model in bf16, batch 64
#      (benchmarks/sampler_bandwidth.py)
# Run from the repository root on the device machine: bash benchmarks/device_check.sh [h200x1]
# Outputs land in $OUT (default /tmp/device_check) as JSON; the last lines compare them.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
GPU=${1:-h200x1}
OUT=${OUT:-/tmp/device_check}
mkdir -p "$OUT"
export PYTHONPATH=.
MODEL=benchmarks/qwen2_1p5b.yaml
echo "== plan (compile-only, on this host's CPU; figures: memory compiled, the rest projected)"
JAX_PLATFORMS=cpu timeout 200 "$PY" -m jaxopt_rl.cli plan --config benchmarks/device_check.yaml \
  --gpu "$GPU" --json "$OUT/plan.json"
echo "== train step (MFU, peak memory)"
timeout 150 "$PY" benchmarks/train_step.py --model "$MODEL" --dtype bfloat16 --param-dtype float32 \
  --rows 8 --horizon 4096 --microbatches 4 --repeats 3 --lock '' | tee "$OUT/train_step.json"
echo "== sampler bandwidth"
timeout 120 "$PY" benchmarks/sampler_bandwidth.py --model "$MODEL" --batch 64 \
  --prompt-len 512 --new-tokens 256 --peak-gbs 4800 | tee "$OUT/sampler.json"
echo "== measured beside predicted"
"$PY" benchmarks/device_compare.py "$OUT"
