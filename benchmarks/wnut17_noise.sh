#!/usr/bin/env bash
# Noise curves on WNUT-17 test for the models trained by benchmarks/wnut17_sides.py
# (run that first; it leaves them in runs/bench-wnut17). Tables, JSON and plots go to
# benchmarks/results/noise-wnut17-{charbert,all-attacks}/.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-runs/bench-wnut17}
MODELS=("subword-alone=$RUNS/subword-alone-m-0-seed42" "char-alone=$RUNS/char-alone-m-0-seed42"
        "entangle-m1=$RUNS/entangle-m-1-seed42" "entangle-m2=$RUNS/entangle-m-2-seed42")
# The headline attack at every rate ...
.venv/bin/entangle robustness "${MODELS[@]}" --data wnut17 --split test --attacks charbert \
    --rates 0,0.25,0.5,0.75,1.0 --seed 0 --output benchmarks/results/noise-wnut17-charbert
# ... and every attack at the full rate.
.venv/bin/entangle robustness "${MODELS[@]}" --data wnut17 --split test \
    --attacks drop,add,swap,keyboard,lower,upper,repeat --rates 0,1.0 --seed 0 \
    --output benchmarks/results/noise-wnut17-all-attacks
