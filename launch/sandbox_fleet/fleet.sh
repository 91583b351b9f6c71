#!/usr/bin/env bash
# Plain multi-host sandbox fleet over ssh (no Kubernetes): install, start, stop, check.
#
#   bash launch/sandbox_fleet/fleet.sh token                    # create the shared token once
#   bash launch/sandbox_fleet/fleet.sh install  host1 host2 ... # copy code, venv, unit, token
#   bash launch/sandbox_fleet/fleet.sh start    host1 host2 ...
#   bash launch/sandbox_fleet/fleet.sh status   host1 host2 ... # GET /health of every node
#   bash launch/sandbox_fleet/fleet.sh urls     host1 host2 ... # prints "http://host1:8000,..."
#   bash launch/sandbox_fleet/fleet.sh stop     host1 host2 ... # drains, then stops
#
# Hosts: Debian/Ubuntu with python3 >= 3.11 and python3-venv, reachable as root over ssh
# (SSH="ssh -o ..." to customise). The nodes listen on 0.0.0.0:8000 with the bearer token;
# keep port 8000 reachable from the training machines only (firewall / security group).
# Environment knobs:
#   TOKEN_FILE  local copy of the token (default ~/.config/sandbox-cluster/token)
#   NODE_ARGS   extra `sandbox-cluster serve` flags per node, e.g. "--cores 2-15 --reserve-cores 0"
#   PORT        node port (default 8000; must match the unit)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
HERE="$ROOT/launch/sandbox_fleet"
TOKEN_FILE="${TOKEN_FILE:-$HOME/.config/sandbox-cluster/token}"
SSH="${SSH:-ssh -o BatchMode=yes -o ConnectTimeout=10}"
PORT="${PORT:-8000}"
REMOTE_DIR=/opt/jaxopt-rl

say() { printf '[fleet.sh] %s\n' "$*" >&2; }
need_hosts() { [ $# -gt 0 ] || { say "give at least one host"; exit 2; }; }
need_token() {
  [ -s "$TOKEN_FILE" ] || { say "no token at $TOKEN_FILE; run: fleet.sh token"; exit 2; }
}

cmd_token() {
  if [ -s "$TOKEN_FILE" ]; then say "token exists: $TOKEN_FILE"; return 0; fi
  mkdir -p "$(dirname "$TOKEN_FILE")"
  (umask 077; python3 -c 'import secrets; print(secrets.token_hex(32))' >"$TOKEN_FILE")
  say "wrote $TOKEN_FILE (clients read it via SANDBOX_CLUSTER_TOKEN or connect(token=...))"
}

cmd_install() {
  need_hosts "$@"; need_token
  local archive
  archive="$(mktemp)"
  trap 'rm -f "$archive"' RETURN
  # Only what a node needs: the package, pyproject, README (package metadata).
  tar -C "$ROOT" --exclude=__pycache__ -czf "$archive" pyproject.toml README.md sandbox_cluster
  for host in "$@"; do
    say "$host: installing into $REMOTE_DIR"
    $SSH "root@$host" "mkdir -p $REMOTE_DIR /etc/sandbox-cluster && rm -rf $REMOTE_DIR/sandbox_cluster"
    $SSH "root@$host" "tar -C $REMOTE_DIR -xzf -" <"$archive"
    $SSH "root@$host" "set -e; cd $REMOTE_DIR
      command -v bwrap >/dev/null || (apt-get update -qq && apt-get install -y -qq bubblewrap)
      mkdir -p jaxopt_rl && touch jaxopt_rl/__init__.py
      [ -x .venv/bin/python ] || python3 -m venv .venv
      .venv/bin/pip install -q --upgrade pip && .venv/bin/pip install -q .
      .venv/bin/python -c 'import sandbox_cluster.server'"
    $SSH "root@$host" "umask 077; cat >/etc/sandbox-cluster/token" <"$TOKEN_FILE"
    if [ -n "${NODE_ARGS:-}" ]; then
      printf 'SANDBOX_ARGS=%s\n' "$NODE_ARGS" | $SSH "root@$host" "cat >/etc/sandbox-cluster/env"
    fi
    $SSH "root@$host" "cat >/etc/systemd/system/sandbox-cluster.service" <"$HERE/sandbox-cluster.service"
    $SSH "root@$host" "systemctl daemon-reload && systemctl enable sandbox-cluster >/dev/null"
  done
}

cmd_start() { need_hosts "$@"; for h in "$@"; do $SSH "root@$h" systemctl restart sandbox-cluster; done; cmd_status "$@"; }
cmd_stop() { need_hosts "$@"; for h in "$@"; do $SSH "root@$h" systemctl stop sandbox-cluster; done; }

cmd_status() {
  need_hosts "$@"
  local urls=() host
  for host in "$@"; do urls+=("http://$host:$PORT"); done
  sleep 1
  # The health command exits 1 if any node is not ok; retry briefly while nodes start.
  for _ in 1 2 3 4 5; do
    if "$ROOT/.venv/bin/sandbox-cluster" health "${urls[@]}"; then return 0; fi
    sleep 2
  done
  return 1
}

cmd_urls() { need_hosts "$@"; local out="" h; for h in "$@"; do out+="${out:+,}http://$h:$PORT"; done; echo "$out"; }

command="${1:-}"; shift || true
case "$command" in
  token) cmd_token ;;
  install) cmd_install "$@" ;;
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  status) cmd_status "$@" ;;
  urls) cmd_urls "$@" ;;
  *) say "usage: fleet.sh token|install|start|stop|status|urls HOST..."; exit 2 ;;
esac
