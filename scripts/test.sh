#!/usr/bin/env bash
# Run gpuledger's test suite on a fresh Debian/Ubuntu machine with its python3, or anywhere with
# a python3 >= 3.11: installs what the tests need (Debian's Prometheus, Alertmanager, Chromium +
# ChromeDriver; python3-venv if needed; the package with its test extras in the project
# virtualenv .venv/, see scripts/venv.sh), runs `ruff check .` (configured in pyproject.toml), then
# pytest. Extra arguments go to pytest. PYTHON=/path/to/python3 picks the interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/venv.sh

gl_python
gl_debian_packages prometheus prometheus-alertmanager chromium chromium-driver systemd
if command -v apt-get >/dev/null 2>&1 && [ ! -x /usr/bin/chromium ]; then
    gl_say "note: no /usr/bin/chromium (Ubuntu has Chromium only as a snap): the dashboard's browser tests will fail"
fi
gl_venv test
gl_say "ruff check ."
.venv/bin/python -m ruff check .
exec .venv/bin/python -m pytest "$@"
