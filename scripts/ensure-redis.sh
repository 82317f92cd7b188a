#!/usr/bin/env bash
# Makes sure redis-server and redis-cli are installed: installs them with
# apt-get when missing and running as root, otherwise says how to.
set -euo pipefail
if command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "redis-server is missing: installing it with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq redis-server redis-tools >/dev/null
  command -v redis-server >/dev/null 2>&1 || { echo "apt-get did not install redis-server" >&2; exit 1; }
  exit 0
fi
cat >&2 <<'MSG'
redis-server is not installed, and this script can only install it as root
with apt-get. Install it yourself, then run the command again:
  Debian/Ubuntu:  sudo apt-get install -y redis-server redis-tools
  macOS:          brew install redis
MSG
exit 1
