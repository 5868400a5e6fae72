#!/usr/bin/env bash
# Creates a separate virtual environment with the real Flink Agents 0.2.0 engine: the flink-agents 0.2.0
# wheel (its Python API plus the Java jars of the runtime, including the Kafka action-state store) and
# apache-flink 2.2.1 (PyFlink and flink-dist). About 1.8 GB and ~220 s on a 2-core machine with a cold
# package cache. The wheel supports Python < 3.12 only. The main environment never gets it.
#
# What uses it (docs/wire-format.md, "Proof by the real engine"), both from the main venv and in .ci/run:
#   * tests/engine020/test_java_reads_020.py compiles a small Java harness against the wheel's jars (javac,
#     Java 17) and feeds every record our 0.2 writer produces to 0.2.0's own deserializer (lane a);
#   * tests/engine020/test_e2e_restore.py runs a real 0.2.0 job with this venv's Python that restores from a
#     state we wrote (lane b; opt-in outside CI: DURABLE_ENGINE020_E2E=1).
#
# Usage: scripts/flink-agents-020-venv.sh [VENV_DIR]   (default: .venv-flink-agents-020 at the repository root)
# Installs a Java 17 JDK with apt-get when javac is missing (root or sudo). Prints the venv directory on its
# last line. Safe to run twice: a complete venv is reused.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$repo/.venv-flink-agents-020}"
export PIP_DISABLE_PIP_VERSION_CHECK=1

python=""
for candidate in python3.11 python3.10 python3; do
    if command -v "$candidate" >/dev/null 2>&1 &&
        "$candidate" -c 'import sys; sys.exit(not ((3, 10) <= sys.version_info[:2] < (3, 12)))'; then
        python="$candidate"
        break
    fi
done
if [ -z "$python" ]; then
    echo "flink-agents 0.2.0 needs Python 3.10 or 3.11; none found on PATH" >&2
    exit 1
fi

if ! command -v javac >/dev/null 2>&1; then
    sudo_cmd=()
    [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
    "${sudo_cmd[@]}" apt-get update -qq
    DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq openjdk-17-jdk-headless >/dev/null
fi

if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
py="$venv/bin/python"
if ! "$py" -c 'import flink_agents, pyflink.datastream' >/dev/null 2>&1 ||
    [ -z "$(find "$("$py" -c 'import flink_agents, os; print(os.path.dirname(flink_agents.__file__))')" -name 'flink-agents-dist-*.jar' -print -quit)" ]; then
    "$py" -m pip install --quiet 'flink-agents==0.2.0' 'apache-flink==2.2.1'
fi
echo "$venv"
