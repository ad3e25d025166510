#!/usr/bin/env bash
# Noise curves on CoNLL-03 test: subword encoder alone, character encoder alone and the
# entanglement model (m=2, both sides), each trained for one epoch (seed 42, same budget)
# through `entangle train`. Finished runs are skipped, so rerunning resumes the chain.
# Tables, JSON and plots go to benchmarks/results/noise-conll03-{charbert,all-attacks}/.
source "$(dirname "$0")/conll03_common.sh"
train subword-alone -m 0 --side subword
train char-alone -m 0 --side char
train entangle-m2 -m 2 --side both
MODELS=("subword-alone=$RUNS/subword-alone" "char-alone=$RUNS/char-alone" "entangle-m2=$RUNS/entangle-m2")
.venv/bin/entangle robustness "${MODELS[@]}" --data conll2003 --split test --attacks charbert \
    --rates 0,0.25,0.5,0.75,1.0 --seed 0 --output benchmarks/results/noise-conll03-charbert
.venv/bin/entangle robustness "${MODELS[@]}" --data conll2003 --split test \
    --attacks drop,add,swap,keyboard,lower,upper,repeat --rates 0,1.0 --seed 0 \
    --output benchmarks/results/noise-conll03-all-attacks
