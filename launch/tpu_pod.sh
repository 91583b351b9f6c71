#!/usr/bin/env bash
# Train on a Cloud TPU VM slice: the SAME command on every worker of the slice.
#
#   gcloud compute tpus tpu-vm ssh "$TPU_NAME" --zone "$ZONE" --worker=all --command \
#     "cd ~/jaxopt-rl && bash launch/tpu_pod.sh configs/train/qwen25_7b_qp_p30.yaml output_dir=gs://bucket/run1"
#
# Assumptions: the repository is checked out at the same path on every worker; Python >= 3.11;
# `pip install -e '.[train]' 'jax[tpu]'` has been run once on every worker (this script does
# not install: a slice's workers must not race on one shared file system); checkpoints go to
# storage every worker can reach (a GCS bucket or a shared disk). jax.distributed discovers the
# slice from the TPU VM metadata (`distributed.mode: auto` -> "tpu"), so no address is passed.
# The sandbox fleet is separate CPU hosts: set `sandbox.urls=[...]` (and a token) in the config.
# Before taking the slice, check on any machine that the run fits it (compile-only, a few minutes):
#   pip install -e '.[train,aot-tpu]' && jaxopt-rl plan --config CONFIG --topology v5p-32
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 CONFIG [key=value ...]" >&2; exit 2; }
cd "$(dirname "${BASH_SOURCE[0]}")/.."
config="$1"; shift
exec python -m jaxopt_rl.cli train --config "$config" "$@"
