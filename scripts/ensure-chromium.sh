#!/usr/bin/env bash
# Makes sure Debian's chromium is at /usr/bin/chromium (the web console's
# browser test drives it): installs it with apt-get when missing and
# running as root, otherwise says how to.
set -euo pipefail
if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "chromium is missing: installing it with apt-get" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq chromium >/dev/null
  [ -x /usr/bin/chromium ] || { echo "apt-get did not install /usr/bin/chromium" >&2; exit 1; }
  exit 0
fi
cat >&2 <<'MSG'
chromium is not installed at /usr/bin/chromium, and this script can only
install it as root with apt-get. Install it yourself, then run the command
again:
  Debian/Ubuntu:  sudo apt-get install -y chromium
MSG
exit 1
