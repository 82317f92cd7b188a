#!/usr/bin/env bash
# Makes sure podman, runc, podman-compose, CA certificates and time zones
# are installed (the image and deployment tests use them): installs them
# with apt-get when missing and running as root, otherwise says how to.
set -euo pipefail
have() { command -v podman >/dev/null 2>&1 && command -v runc >/dev/null 2>&1 && command -v podman-compose >/dev/null 2>&1 &&
  [ -f /etc/ssl/certs/ca-certificates.crt ] && [ -d /usr/share/zoneinfo ]; }
if have; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "podman, runc or podman-compose is missing: installing them with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq podman runc podman-compose ca-certificates tzdata >/dev/null
  have || { echo "apt-get did not install podman, runc and podman-compose" >&2; exit 1; }
  exit 0
fi
cat >&2 <<'MSG'
podman (with runc) and podman-compose are not installed, and this script
can only install them as root with apt-get. Install them, then run the
command again:
  Debian/Ubuntu:  sudo apt-get install -y podman runc podman-compose ca-certificates tzdata
MSG
exit 1
