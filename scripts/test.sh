#!/usr/bin/env bash
# Sets up and runs the test suite (the README's test command; CI runs exactly this).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/python -m pytest -q "$@"
