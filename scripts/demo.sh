#!/usr/bin/env bash
# Run gpuledger's demo on a fresh Debian/Ubuntu machine with its python3, or anywhere with a
# python3 >= 3.11: installs python3-venv if needed, makes the project virtualenv .venv/ with
# gpuledger in it (see scripts/venv.sh), then runs `gpuledger demo --no-auth` (a local demo:
# the dashboard without login). Extra arguments go to `gpuledger demo`, e.g. --port 8060,
# --gpus 16 --days 3, --no-serve. PYTHON=/path/to/python3 picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

gl_venv
gl_say "running .venv/bin/gpuledger demo --no-auth $*"
exec .venv/bin/gpuledger demo --no-auth "$@"
