#!/usr/bin/env bash
# The main job on the embedded defaults: set up, train the entanglement model (built-in
# character encoder + all-MiniLM-L6-v2, m = 2, both heads, each loss training only its own side)
# on WNUT-17, evaluate it on the test set, and tag an example sentence. One epoch (EPOCHS=N for
# more): 6 to 9 minutes on 2 otherwise idle CPU cores (benchmarks/RESULTS.md, "The main job").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
OUT=${OUT:-runs/main-wnut17}
.venv/bin/entangle train --data wnut17 --epochs "${EPOCHS:-1}" --output "$OUT"
.venv/bin/entangle evaluate "$OUT" --data wnut17 --split test --output "$OUT/test_metrics.json"
echo "Going to see Lady Gaga at Madison Square Garden with @mike tonite !!" | .venv/bin/entangle predict "$OUT"
