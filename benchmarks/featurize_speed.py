"""Featurizing speed (words, characters and subwords aligned, windows cut) on WNUT-17 test, this
checkout's ``Featurizer`` against the one of an earlier commit, and (``--parts collate``)
collating the windows into padded batches of 128 with this checkout's ``Collator`` against that
commit's; passes alternating in one process so that a change in the machine's load hits both
alike. Issue #27: end to end on a GPU, predict was bound by featurizing and collating.

    python benchmarks/featurize_speed.py --against c576773 --output benchmarks/results/featurize_speed.json
    python benchmarks/featurize_speed.py --against d365d73 --parts collate --output benchmarks/results/collate_speed.json
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

import torch

from entangle.data import batching
from entangle.data.corpus import load_corpus
from entangle.data.features import Featurizer
from entangle.predict import Tagger

ROOT = Path(__file__).resolve().parents[1]


def module_at(revision: str, name: str):
    """The module ``entangle/data/{name}.py`` at ``revision``, imported inside this package (its
    relative imports resolve to this checkout's modules)."""
    source = subprocess.run(["git", "show", f"{revision}:entangle/data/{name}.py"], cwd=ROOT, check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / f"{name}_then.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location(f"entangle.data.{name}_then", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def timed(runs: dict, rounds: int, words: int) -> dict:
    """Median time and words/s of each of ``runs`` (name -> callable), called in turn ``rounds`` times."""
    times: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            start = time.perf_counter()
            run()
            times[name].append(time.perf_counter() - start)
    return {name: {"median_s": statistics.median(t), "words_per_s": words / statistics.median(t)} for name, t in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--against", required=True, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--parts", default="featurize", help="featurize, collate, or both, comma-separated")
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
    parts = args.parts.split(",")
    results = {}
    if "featurize" in parts:
        classes = {"now": Featurizer, args.against: module_at(args.against, "features").Featurizer}
        for setup, options in setups.items():
            featurizers = {name: cls(tokenizer, **options) for name, cls in classes.items()}
            same = [vars(w) for w in featurizers["now"].featurize(sentences)] == [
                vars(w) for w in featurizers[args.against].featurize(sentences)]
            results[setup] = {"identical_windows": same, **timed(
                {name: (lambda f=f: f.featurize(sentences)) for name, f in featurizers.items()}, args.rounds, words)}
    if "collate" in parts:  # the default model's windows (with their character spans), batches of 128
        windows = Featurizer(tokenizer, **setups["with subword character spans"]).featurize(sentences)
        modules = {"now": batching, args.against: module_at(args.against, "batching")}
        batches = {name: (lambda m=m: [b for _, b in m.inference_batches(windows, 128, m.Collator(tokenizer.pad_token_id))])
                   for name, m in modules.items()}
        made = {name: run() for name, run in batches.items()}
        same = all(a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
                   for a, b in zip(made["now"], made[args.against], strict=True))
        results["collating, batches of 128"] = {"identical_batches": same, **timed(batches, args.rounds, words)}
    for setup, result in results.items():
        result["speed-up"] = result[args.against]["median_s"] / result["now"]["median_s"]
        print(setup, json.dumps(result))
    Path(args.output).write_text(json.dumps({
        "command": "python benchmarks/featurize_speed.py " + " ".join(sys.argv[1:]), "words": words,
        "sentences": len(sentences), "rounds": args.rounds, "machine": platform.processor() or platform.machine(),
        "results": results}, indent=2))


if __name__ == "__main__":
    main()
