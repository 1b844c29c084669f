#!/usr/bin/env bash
# Starts a throwaway PostgreSQL 15 cluster with pgvector on 127.0.0.1 for the test suite and prints
# its URL on the last line. Builds pgvector from Debian trixie's source package when it is missing
# (bookworm does not package it). Re-running reuses a running cluster.
set -euo pipefail
PORT="${KBAGENT_PG_PORT:-55432}"
DIR="${KBAGENT_PG_DIR:-/tmp/kbagent-pg}"
BIN=/usr/lib/postgresql/15/bin
URL="postgresql+psycopg://postgres@127.0.0.1:${PORT}/kbagent_test"

if [ ! -f /usr/share/postgresql/15/extension/vector.control ]; then
  echo "building pgvector from source" >&2
  # The same Debian mirror apt already uses for bookworm.
  mirror=$( (grep -hE '^\s*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
             grep -hE '^\s*deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}') | grep -E '/debian/?$' | head -1 || true)
  echo "deb-src ${mirror:-http://deb.debian.org/debian} trixie main" > /etc/apt/sources.list.d/kbagent-trixie-src.list
  apt-get update -qq
  build=$(mktemp -d)
  (cd "$build" && apt-get source --download-only -qq pgvector && dpkg-source -x --no-check pgvector_*.dsc src >/dev/null \
    && cd src && make -s PG_CONFIG=$BIN/pg_config >/dev/null && make -s install PG_CONFIG=$BIN/pg_config >/dev/null)
  rm -rf "$build" /etc/apt/sources.list.d/kbagent-trixie-src.list
  apt-get update -qq || true
fi

if ! runuser -u postgres -- $BIN/pg_ctl -D "$DIR" status >/dev/null 2>&1; then
  rm -rf "$DIR"
  mkdir -p "$DIR" && chown postgres:postgres "$DIR"
  runuser -u postgres -- $BIN/initdb -D "$DIR" -A trust -U postgres --encoding=UTF8 >/dev/null
  runuser -u postgres -- $BIN/pg_ctl -D "$DIR" -l "$DIR/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p ${PORT} -k /tmp -c max_connections=200 -c fsync=off" start >/dev/null
  runuser -u postgres -- $BIN/createdb -h 127.0.0.1 -p "$PORT" kbagent_test
fi
echo "$URL"
