"""Where a noisy-copy score comes from: recall and precision on the test entities that have a
perturbed word against those left intact, per system and side, from the predictions a bench run
kept on that copy (``test_predictions_ATTACK_RATE.json.gz``). The copy is drawn again exactly as
``entangle bench`` drew it (``entangle perturb``'s seed 0).

    python benchmarks/perturbed_entities.py conll2003 charbert@1.0 NAME=RESULT_DIR [NAME=RESULT_DIR ...]

Prints the table and writes ``benchmarks/results/perturbed_entities.json``.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path

from seqeval.metrics.sequence_labeling import get_entities

from entangle import load_corpus
from entangle.bench import predictions_file
from entangle.noise import perturb_sentences

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "perturbed_entities.json"


def split_scores(gold: list[list[str]], predicted: list[list[str]], changed: list[list[bool]]) -> dict:
    """Entity recall and precision (× 100) on entities with a changed word and on the others."""
    counts = {group: {"gold": 0, "found": 0, "predicted": 0, "right": 0} for group in ("perturbed", "intact")}
    for tags, guesses, flags in zip(gold, predicted, changed):
        gold_entities, predicted_entities = set(get_entities(tags)), set(get_entities(guesses))
        for entities, total, hits, other in ((gold_entities, "gold", "found", predicted_entities),
                                             (predicted_entities, "predicted", "right", gold_entities)):
            for entity in entities:
                group = counts["perturbed" if any(flags[entity[1] : entity[2] + 1]) else "intact"]
                group[total] += 1
                group[hits] += entity in other
    return {group: {"entities": c["gold"], "recall": 100 * c["found"] / max(c["gold"], 1),
                    "predicted": c["predicted"], "precision": 100 * c["right"] / max(c["predicted"], 1)}
            for group, c in counts.items()}


def main() -> None:
    dataset, variant, *runs = sys.argv[1:]
    attack, _, rate = variant.partition("@")
    clean = load_corpus(dataset, splits=("test",)).test
    noisy = perturb_sentences(clean, attack, float(rate), 0)
    changed = [[a != b for a, b in zip(c.words, n.words)] for c, n in zip(clean, noisy)]
    results = {"dataset": dataset, "test": variant, "command": "python benchmarks/perturbed_entities.py "
               + " ".join(f'"{a}"' if " " in a else a for a in sys.argv[1:]), "systems": {}}
    for spec in runs:
        name, directory = spec.split("=", 1)
        with gzip.open(Path(directory) / predictions_file(variant), "rt", encoding="utf-8") as file:
            kept = json.load(file)
        if kept["gold"] != [s.tags for s in clean]:
            sys.exit(f"{directory}: its {variant} predictions are not on {dataset}'s test set")
        for side, predicted in kept["predicted"].items():
            row = split_scores(kept["gold"], predicted, changed)
            results["systems"][f"{name} ({side})"] = row
            print(f"{name} ({side}): " + "; ".join(f"{group} {r['entities']} entities, recall {r['recall']:.2f}, "
                                                  f"precision {r['precision']:.2f} of {r['predicted']}"
                                                  for group, r in row.items()), flush=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
