# Shared by the CoNLL-03 benchmark scripts: `train NAME OPTIONS...` trains one system for
# $EPOCHS epochs (seed 42, same budget for every system) into $RUNS/NAME and evaluates it on
# test. A finished run is skipped and an interrupted one resumes from its checkpoint, so
# rerunning a script continues its chain.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
RUNS=${RUNS:-runs/bench-conll03}
EPOCHS=${EPOCHS:-1}
train() {  # name, options...
    local out=$RUNS/$1; shift
    if [[ ! -f $out/test_metrics.json ]]; then
        if [[ -d $out/checkpoint ]]; then
            .venv/bin/entangle train --resume "$out"
        else
            .venv/bin/entangle train --data conll2003 --epochs "$EPOCHS" --seed 42 --patience 0 \
                --save-steps 200 "$@" --output "$out"
        fi
        .venv/bin/entangle evaluate "$out" --data conll2003 --output "$out/test_metrics.json"
    fi
}
