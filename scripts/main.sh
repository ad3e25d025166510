#!/usr/bin/env bash
# The main job on the embedded defaults: set up, train the entanglement model (the shipped
# pretrained character encoder builtin-en + all-MiniLM-L6-v2, m = 2, each side's head trained
# on its own side, and the joint head reading both, which predicts; a fifth of each epoch's
# training sentences lower-cased) on WNUT-17, evaluate it on the test set, and tag an example
# sentence. Three epochs (EPOCHS=N to change; at one epoch the joint head still lags the subword
# head): benchmarks/RESULTS.md, "The main job".
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
EPOCHS=${EPOCHS:-3}
OUT=${OUT:-runs/main-wnut17-${EPOCHS}-epochs}  # another budget, another run
if [ -d "$OUT/checkpoint" ]; then  # run before: continued (a finished run trains no further)
    .venv/bin/entangle train --resume "$OUT" --epochs "$EPOCHS"  # warns if OUT was started with other epochs
else
    .venv/bin/entangle train --data wnut17 --epochs "$EPOCHS" --output "$OUT"
fi
.venv/bin/entangle evaluate "$OUT" --data wnut17 --split test --output "$OUT/test_metrics.json"
echo "Going to see Lady Gaga at Madison Square Garden with @mike tonite !!" | .venv/bin/entangle predict "$OUT"
