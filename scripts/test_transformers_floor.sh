#!/usr/bin/env bash
# Checks entangle on an older transformers than the one scripts/setup.sh installs: by default on the
# floor of pyproject.toml's `transformers>=X,<6` (the lowest version the package claims to work with).
#
#   scripts/test_transformers_floor.sh                  # the floor from pyproject.toml
#   scripts/test_transformers_floor.sh 5.17.0 5.0.0     # any versions, one after the other
#
# Each version gets its own throwaway virtual environment outside the repository
# ($ENTANGLE_FLOOR_DIR/VERSION, default /tmp/entangle-transformers-floor/VERSION): the CPU torch that
# scripts/setup.sh pins (first, so that nothing pulls torch with gigabytes of CUDA packages), that
# transformers, the package's other dependencies as pyproject.toml lists them (pip picks the newest
# that fit that transformers), pytest, and this checkout installed editable without dependencies. Then
# `import entangle` and the tests that build tiny models from configs and save and load them
# (tests/test_modeling.py, tests/test_charbert.py). Extra pytest arguments go in $PYTEST_ARGS.
# Exits non-zero if any version fails; prints one line per version at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
root=${ENTANGLE_FLOOR_DIR:-/tmp/entangle-transformers-floor}
torch_pin=$(grep -o 'torch==[0-9.]*' scripts/setup.sh | head -n 1)

if [ $# -eq 0 ]; then
    floor=$(python3 -c 'import re, sys
text = open("pyproject.toml").read()
print(re.search(r"\"transformers>=([0-9.]+)", text).group(1))')
    set -- "$floor"
fi

# pyproject.toml's dependencies, less torch (pinned above) and transformers (the version under test).
others=$(python3 -c 'import tomllib
deps = tomllib.load(open("pyproject.toml", "rb"))["project"]["dependencies"]
print(" ".join(d for d in deps if not d.startswith(("torch", "transformers"))))')

summary=()
status=0
for version in "$@"; do
    venv="$root/$version"
    echo "=== transformers $version in $venv"
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --upgrade pip
    "$venv/bin/python" -m pip install --quiet "$torch_pin"
    # shellcheck disable=SC2086  # one word per requirement
    "$venv/bin/python" -m pip install --quiet "transformers==$version" $others "pytest>=8"
    "$venv/bin/python" -m pip install --quiet --no-deps -e "$repo"
    "$venv/bin/python" -c 'import importlib.metadata as m
print(", ".join(f"{n} {m.version(n)}" for n in ("torch", "transformers", "tokenizers", "huggingface_hub", "accelerate")))'
    if "$venv/bin/python" -c 'import entangle' \
        && OMP_NUM_THREADS=${OMP_NUM_THREADS:-1} "$venv/bin/python" -m pytest -q -p no:cacheprovider \
            tests/test_modeling.py tests/test_charbert.py ${PYTEST_ARGS:-}; then
        summary+=("transformers $version: passed")
    else
        summary+=("transformers $version: FAILED")
        status=1
    fi
done
printf '%s\n' "${summary[@]}"
exit $status
