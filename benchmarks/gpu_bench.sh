#!/usr/bin/env bash
# Bench runs on a lent GPU (the device tool; see the developers' guide) within a deadline, the finished ones packed to come back:
#   ../shared/tools/offline-bundle .gpu DATASET...   (here, after scripts/setup.sh)
#   With wnut17 and conll2003 the bundle and the checkout came to just over the 64 MiB a call
#   carries (session 27); packing the datasets into one xz file brings them to 60:
#     python3 -c "import tarfile; tarfile.open('.gpu/data.tar.xz', 'w:xz').add('.gpu/data', 'data')" && rm -rf .gpu/data
#   and there, first: python3 -c "import tarfile; tarfile.open('.gpu/data.tar.xz').extractall('.gpu')"
#   device run, carry [".gpu"]:
#     source .gpu/env.sh && bash benchmarks/gpu_bench.sh "$OUT" 480 benchmarks/informed_char.yaml \
#         --datasets conll2003 --seeds 43 --systems "CharBERT-style" ... --workers 8
# Runs `entangle bench GRID OPTIONS...` until SECONDS after this script starts, then packs every
# run folder of the grid's results folder that finished since (its result.json is newer than the
# start) into OUT/bench.tar.gz with the log (runs/gpu_bench.log; one file back of the 8 a call returns); unpack it here at the project's root
# (`tar xzf bench.tar.gz`), then `entangle bench GRID --report-only`. A run still training or
# scoring at the deadline is lost with the machine: on an H100 a 3-epoch CoNLL-03 run took 3-4
# minutes of training with four at once, and scoring its three noisy test copies more than a
# minute besides (session 27), so leave the runs' full time before the deadline.
set -uo pipefail
out=${1:?usage: bash benchmarks/gpu_bench.sh OUT SECONDS GRID [bench options...]}
deadline=${2:?seconds}; grid=${3:?grid}; shift 3
py=${PYTHON:-python3}
mkdir -p runs; log=runs/gpu_bench.log; list=$(mktemp); touch "$list"  # the list's time marks the start
results=$("$py" -c 'import sys; from entangle.bench import BenchConfig; c = BenchConfig.from_file(sys.argv[1]); print(c.results or c.output)' "$grid")
left=$((deadline - SECONDS))
if [ "$left" -gt 0 ]; then  # (timeout 0 would mean no limit at all)
    timeout --kill-after=5 "$left" "$py" -m entangle.cli bench "$grid" "$@" > "$log" 2>&1
    echo "bench: exit status $? after $SECONDS s (124: stopped at the deadline)"
fi
find "$results" -name result.json -newer "$list" -printf '%h\n' | sort > "$list.runs"
[ -f "$log" ] && echo "$log" >> "$list.runs"
tar czf "$out/bench.tar.gz" -T "$list.runs"
echo "finished runs: $(grep -vc gpu_bench.log "$list.runs")"; cat "$list.runs"
