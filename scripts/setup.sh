#!/usr/bin/env bash
# Creates .venv with the pinned CPU build of torch (2.13.0) first, so that nothing pulls an
# unpinned torch with gigabytes of CUDA packages, then installs entangle with its test extras.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0
.venv/bin/python -m pip install --quiet -e ".[dev]"
.venv/bin/python -c "import torch, transformers; print(f'torch {torch.__version__}, transformers {transformers.__version__}')"
