#!/usr/bin/env bash
# Issue 26, step 1: character encoders and pretraining objectives compared at equal compute
# (the same minutes of training on one CPU thread, the same corpus and seed as `builtin-en`),
# before a long run. Resumable: a finished variant is skipped, an interrupted one resumed.
#
#   OMP_NUM_THREADS=1 bash benchmarks/pretrain_compare/run.sh CORPUS OUTPUT [VARIANT...]
#
# CORPUS is `python benchmarks/pretraining_corpus.py --output CORPUS`. Each encoder is then
# fine-tuned alone (char alone, 3 seeds) by the grid benchmarks/char_pretraining.yaml.
set -euo pipefail
corpus=$1 output=$2; shift 2
here=$(dirname "$0")
minutes=${MINUTES:-20}
declare -A char objectives
char=([lstm-mlm-distill]=builtin [lstm-mlm]=builtin [lstm-distill]=builtin
      [lstm-2layer]=$here/lstm-2layer.json [lstm-2layer-mlm]=$here/lstm-2layer.json
      [canine-small]=$here/canine-small.json)
objectives=([lstm-mlm-distill]="mlm distill" [lstm-mlm]=mlm [lstm-distill]=distill
            [lstm-2layer]="mlm distill" [lstm-2layer-mlm]=mlm [canine-small]="mlm distill")
variants=("$@")
[ ${#variants[@]} -gt 0 ] || variants=(lstm-mlm-distill lstm-mlm lstm-distill lstm-2layer lstm-2layer-mlm canine-small)
for name in "${variants[@]}"; do
  dir=$output/$name
  if [ -f "$dir/pretraining.json" ]; then echo "$name: done"; continue; fi
  if [ -d "$dir/checkpoint" ]; then
    python3 -m entangle.cli pretrain-char --resume "$dir"
  else
    # shellcheck disable=SC2086
    python3 -m entangle.cli pretrain-char --char "${char[$name]}" --objectives ${objectives[$name]} \
      --text "$corpus"/tweeteval.txt "$corpus"/gcide.txt "$corpus"/wordnet.txt "$corpus"/fortunes.txt \
      "$corpus"/debian-reference.txt --data wnut17 conll2003 tweebank --noise-attacks charbert lower \
      --max-minutes "$minutes" --max-steps 20000 --save-steps 250 --log-steps 50 --seed 42 --output "$dir"
  fi
done
