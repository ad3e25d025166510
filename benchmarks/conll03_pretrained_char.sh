#!/usr/bin/env bash
# Issue #8 on CoNLL-03 test: the entanglement model (m=2, both sides) with each pretrained
# character encoder of benchmarks/wnut17_sides.py (runs/pretrain-char/{mlm,distill,mlm+distill},
# 10 minutes of pretraining each), fine-tuned exactly like the from-scratch run of
# conll03_noise.sh (entangle-m2: 1 epoch, seed 42); the pretrained encoder trains at the
# from-scratch rate (--char-lr 5e-4), as on WNUT-17.
source "$(dirname "$0")/conll03_common.sh"
for name in ${PRETRAINED:-mlm distill mlm+distill}; do
    train "entangle-m2-char-$name" -m 2 --side both --char "runs/pretrain-char/$name" --char-lr 5e-4
done
