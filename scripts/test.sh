#!/usr/bin/env bash
# Sets up and runs the test suite (the README's test command; CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
# One worker per CPU core, each test file whole on one worker (its module fixtures built once).
.venv/bin/python -m pytest -q -n auto --dist loadfile "$@"
