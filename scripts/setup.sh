#!/usr/bin/env bash
# Creates .venv with the pinned CPU build of torch (2.13.0) first, so that nothing pulls an
# unpinned torch with gigabytes of CUDA packages, then installs entangle with its test extras.
# This project's machines take the CPU build from their own wheel source; on a plain Linux x86_64
# machine PyPI's torch 2.13.0 is the CUDA build: TORCH_INDEX=https://download.pytorch.org/whl/cpu
# takes the CPU build from PyTorch's index instead.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet torch==2.13.0 ${TORCH_INDEX:+--index-url "$TORCH_INDEX"}
.venv/bin/python -m pip install --quiet -e ".[dev]"
.venv/bin/python -c "import torch, transformers; print(f'torch {torch.__version__}, transformers {transformers.__version__}')"
