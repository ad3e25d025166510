"""Featurizing speed (words, characters and subwords aligned, windows cut) on WNUT-17 test, this
checkout's ``Featurizer`` against the one of an earlier commit, passes alternating in one process
so that a change in the machine's load hits both alike. Issue #27: end to end on a GPU, predict
was bound by featurizing.

    python benchmarks/featurize_speed.py --against c576773 --output benchmarks/results/featurize_speed.json
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from entangle.data.corpus import load_corpus
from entangle.data.features import Featurizer
from entangle.predict import Tagger

ROOT = Path(__file__).resolve().parents[1]


def featurizer_at(revision: str):
    """The ``Featurizer`` class of ``entangle/data/features.py`` at ``revision``, imported inside
    this package (its relative imports resolve to this checkout's modules)."""
    source = subprocess.run(["git", "show", f"{revision}:entangle/data/features.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "features_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("entangle.data.features_then", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module.Featurizer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    # A process that holds a model, as predict's does: the cycle collector scans its objects too.
    tagger = Tagger.create("builtin", "minilm", ["O", "B-X", "I-X"])
    tokenizer, config = tagger.tokenizer, tagger.model.config
    sentences = [s.words for s in load_corpus("wnut17", splits=("test",)).test]
    words = sum(map(len, sentences))
    # The default model's limits, and positional alignment's extra spans.
    limits = dict(max_chars=config.max_chars, max_subwords=config.max_subwords)
    setups = {"default windows": limits, "with subword character spans": dict(limits, subword_char_spans=True)}
    classes = {"now": Featurizer, args.against: featurizer_at(args.against)}
    results = {}
    for setup, options in setups.items():
        featurizers = {name: cls(tokenizer, **options) for name, cls in classes.items()}
        same = [vars(w) for w in featurizers["now"].featurize(sentences)] == [
            vars(w) for w in featurizers[args.against].featurize(sentences)]
        times: dict[str, list[float]] = {name: [] for name in featurizers}
        for _ in range(args.rounds):
            for name, featurizer in featurizers.items():
                start = time.perf_counter()
                featurizer.featurize(sentences)
                times[name].append(time.perf_counter() - start)
        results[setup] = {"identical_windows": same, **{
            name: {"median_s": statistics.median(t), "words_per_s": words / statistics.median(t)} for name, t in times.items()}}
        results[setup]["speed-up"] = results[setup][args.against]["median_s"] / results[setup]["now"]["median_s"]
        print(setup, json.dumps(results[setup]))
    Path(args.output).write_text(json.dumps({
        "command": "python benchmarks/featurize_speed.py " + " ".join(sys.argv[1:]), "words": words,
        "sentences": len(sentences), "rounds": args.rounds, "machine": platform.processor() or platform.machine(),
        "results": results}, indent=2))


if __name__ == "__main__":
    main()
