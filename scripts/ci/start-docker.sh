#!/usr/bin/env bash
# Starts a Docker engine for the sandbox tests when none answers, then builds the sandbox image.
# dockerd runs in the background with its log in a file; re-running reuses a running engine and image.
set -euo pipefail
cd "$(dirname "$0")/../.."
LOG="${KBAGENT_DOCKERD_LOG:-/tmp/kbagent-dockerd.log}"

if ! docker info >/dev/null 2>&1; then
  echo "starting dockerd (log: $LOG)" >&2
  # A dockerd killed with its session leaves its pid files behind; a new one refuses to start over them.
  for pidfile in /var/run/docker.pid /var/run/docker/containerd/containerd.pid; do
    if [ -f "$pidfile" ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then
      rm -f "$pidfile"
    fi
  done
  nohup dockerd >"$LOG" 2>&1 &
  for _ in $(seq 1 60); do
    docker info >/dev/null 2>&1 && break
    sleep 0.5
  done
  docker info >/dev/null 2>&1 || { echo "dockerd did not answer within 30 s; see $LOG" >&2; tail -20 "$LOG" >&2; exit 1; }
fi
bash scripts/build-sandbox-image.sh
