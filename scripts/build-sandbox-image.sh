#!/usr/bin/env bash
# Builds the default sandbox image for kbagent's Python functions: a minimal Debian bookworm with
# python3 and its standard library only. Nothing else is installed, now or at run time.
#
#   scripts/build-sandbox-image.sh                 offline: debootstrap from the Debian mirror apt uses
#   scripts/build-sandbox-image.sh --dockerfile    FROM python:3.11-slim, where a registry is reachable
#   scripts/build-sandbox-image.sh --rootfs DIR    offline, keeps the root file system in DIR for the bubblewrap
#                                                  runner (python.rootfs); also imports it when Docker answers
#   options: --image NAME:TAG (default kbagent-sandbox:latest, or $KBAGENT_PYTHON_IMAGE), --force (rebuild),
#            --docker PATH (Docker CLI, default $KBAGENT_PYTHON_DOCKER or docker)
# Idempotent: does nothing when the image (or DIR) exists, unless --force. Offline modes need root and debootstrap.
set -euo pipefail

IMAGE="${KBAGENT_PYTHON_IMAGE:-kbagent-sandbox:latest}"
DOCKER="${KBAGENT_PYTHON_DOCKER:-docker}"
MODE=debootstrap
FORCE=0
KEEP=""
while [ $# -gt 0 ]; do
  case "$1" in
    --dockerfile) MODE=dockerfile ;;
    --force) FORCE=1 ;;
    --image) IMAGE="$2"; shift ;;
    --docker) DOCKER="$2"; shift ;;
    --rootfs) KEEP="$2"; shift ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "unknown option: $1" >&2; exit 2 ;;
  esac
  shift
done

HAVE_DOCKER=0
"$DOCKER" info >/dev/null 2>&1 && HAVE_DOCKER=1
if [ -n "$KEEP" ]; then
  if [ "$FORCE" = 0 ] && [ -x "$KEEP/usr/bin/python3" ]; then
    echo "root file system $KEEP already exists (use --force to rebuild)"
    exit 0
  fi
elif [ "$HAVE_DOCKER" = 0 ]; then
  echo "the Docker daemon does not answer ('$DOCKER info' failed); start it first (scripts/ci/start-docker.sh)" >&2
  exit 1
elif [ "$FORCE" = 0 ] && "$DOCKER" image inspect "$IMAGE" >/dev/null 2>&1; then
  echo "image $IMAGE already exists (use --force to rebuild)"
  exit 0
fi

if [ "$MODE" = dockerfile ]; then
  ctx=$(mktemp -d)
  trap 'rm -rf "$ctx"' EXIT
  cat > "$ctx/Dockerfile" <<'DOCKERFILE'
FROM python:3.11-slim
# The standard library only: functions that need packages run in an image the operator prepares and reviews.
RUN ln -sf /usr/local/bin/python3 /usr/bin/python3 2>/dev/null || true
USER 65534:65534
DOCKERFILE
  "$DOCKER" build -t "$IMAGE" "$ctx"
  echo "built $IMAGE from python:3.11-slim"
  exit 0
fi

if [ "$(id -u)" != 0 ]; then
  echo "offline mode runs debootstrap and needs root (or use --dockerfile where a registry is reachable)" >&2
  exit 1
fi
command -v debootstrap >/dev/null || { echo "debootstrap is not installed: apt-get install -y debootstrap" >&2; exit 1; }

# The same Debian mirror apt already uses (deb822 .sources first, then the classic sources.list).
mirror=$( (grep -hE '^\s*URIs:' /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '{print $2}';
           grep -hE '^\s*deb ' /etc/apt/sources.list 2>/dev/null | awk '{print $2}') | grep -E '/debian/?$' | head -1 || true)
mirror="${mirror:-http://deb.debian.org/debian}"

if [ -n "$KEEP" ]; then
  rm -rf "$KEEP"
  mkdir -p "$KEEP"
  rootfs=$(cd "$KEEP" && pwd)
else
  rootfs=$(mktemp -d)
  trap 'rm -rf "$rootfs"' EXIT
fi
echo "debootstrap bookworm from $mirror (about a minute)"
# python3, not python3-minimal: the minimal package lacks json, which the harness needs.
debootstrap --variant=minbase --include=python3 bookworm "$rootfs" "$mirror" >"$rootfs.log" 2>&1 || {
  tail -20 "$rootfs.log" >&2; rm -f "$rootfs.log"; exit 1; }
rm -f "$rootfs.log"
rm -rf "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* \
       "$rootfs"/usr/share/locale/* "$rootfs"/var/cache/apt/* "$rootfs"/var/lib/apt/lists/* \
       "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/log/*
# The standard library's __pycache__ stays: with a read-only root and -B, every call would otherwise
# recompile what it imports (asyncio alone took 0.7 s here).
size=$(du -sh "$rootfs" | cut -f1)
if [ -n "$KEEP" ]; then
  echo "root file system in $rootfs ($size); set python.rootfs to it for the bubblewrap runner"
  [ "$HAVE_DOCKER" = 1 ] || exit 0
fi
tar -C "$rootfs" -c . | "$DOCKER" import \
  --change 'USER 65534:65534' --change 'WORKDIR /tmp' --change 'CMD ["python3"]' - "$IMAGE" >/dev/null
echo "built $IMAGE ($size root file system)"
