#!/bin/sh
# Debian's Chromium for the browser tests (tox -e browser). Playwright's own
# browser download cannot reach this machine; Debian's package can. Liberation
# Sans has Arial's metrics, which vl-convert lays chart text out with.
set -eu
if [ -x /usr/bin/chromium ] && fc-list 2>/dev/null | grep -q "Liberation Sans"; then
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "install-chromium: /usr/bin/chromium is missing; run as root or: apt-get install chromium" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core fonts-liberation2 >/dev/null
/usr/bin/chromium --version
