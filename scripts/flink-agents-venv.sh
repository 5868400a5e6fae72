#!/usr/bin/env bash
# Creates a separate virtual environment with the real Flink Agents Python API (flink-agents 0.3.1 and
# apache-flink, about 1.3 GB together) plus this project, so tests/flink_agents and the package's own tests
# (the upstream lane) run against the installed package. The main environment stays free of it:
# flink_agents is an optional extra (pytest-durable[flink-agents]).
#
# Usage: scripts/flink-agents-venv.sh [VENV_DIR]   (default: .venv-flink-agents at the repository root)
# Prints the venv directory on its last line. Safe to run twice: a complete venv is reused.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$repo/.venv-flink-agents}"

# The flink-agents build wants to download Flink jars; the Python API needs none, and the download cannot
# succeed without network access, so it is always skipped.
export FLINK_AGENTS_SKIP_JAR_DOWNLOAD=1
export PIP_DISABLE_PIP_VERSION_CHECK=1

if [ ! -x "$venv/bin/python" ]; then
    python -m venv "$venv"
fi
py="$venv/bin/python"

if ! "$py" -c 'import flink_agents.api.agents.agent, pyflink.common' >/dev/null 2>&1; then
    "$py" -m pip install --quiet 'flink-agents==0.3.1' apache-flink
fi
# Always (re)install this checkout, so the venv tests the tree the script was run from.
"$py" -m pip install --quiet -e "$repo[dev,flink-agents]"
echo "$venv"
