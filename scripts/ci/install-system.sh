#!/usr/bin/env bash
# Installs the Debian packages that the test suite's real services need:
# PostgreSQL 15 (+ headers to build pgvector), a Docker engine, debootstrap for the
# offline sandbox image, bubblewrap, and a CJK font for document fixtures.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
need=()
for pkg in postgresql-15 postgresql-server-dev-15 make gcc docker.io debootstrap bubblewrap \
           fonts-noto-cjk dpkg-dev; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${need[@]}"
fi
