#!/usr/bin/env bash
# Install the headless browser that tests/test_browser.py drives: Debian's chromium and chromium-driver.
# `make browser` (a step of `make test`) and the test's fixture call this. Already installed: nothing to do.
# Not installable (no apt-get, not root and no sudo, no package index): say why and exit 0; the test then skips
# with that reason. Nothing here downloads a browser build of its own: only the distribution's packages.
set -u
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    echo "browser: chromium/chromedriver missing and no apt-get here; tests/test_browser.py will skip" >&2
    exit 0
fi
SUDO=""
if [ "$(id -u)" != "0" ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        SUDO="sudo -n"
    else
        echo "browser: chromium/chromedriver missing; installing needs root (apt-get install chromium chromium-driver)" >&2
        exit 0
    fi
fi
export DEBIAN_FRONTEND=noninteractive
echo "browser: installing chromium and chromium-driver (apt-get)"
if ! $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null 2>&1; then
    $SUDO apt-get update -qq >/dev/null 2>&1
    if ! $SUDO apt-get install -y -qq chromium chromium-driver >/dev/null; then
        echo "browser: apt-get could not install chromium chromium-driver; tests/test_browser.py will skip" >&2
        exit 0
    fi
fi
command -v chromium && command -v chromedriver
exit 0
