"""Where do WNUT-17 test entities get lost? Recall on entities whose surface form occurs as an
entity in the training set ("seen") vs those that do not ("unseen"), per model and side.

    python benchmarks/wnut17_unseen.py NAME=MODEL_DIR [NAME=MODEL_DIR ...]

Writes ``benchmarks/results/wnut17_unseen.json`` and a table section in ``benchmarks/RESULTS.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from seqeval.metrics.sequence_labeling import get_entities

from results_md import replace_section

from entangle import Tagger, load_corpus

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "wnut17_unseen.json"
SECTION = "wnut17-unseen"


def entities(sentences_tags, sentences_words):
    """(sentence, type, start, end, lower-cased surface) for every entity."""
    out = set()
    for index, (tags, words) in enumerate(zip(sentences_tags, sentences_words)):
        for kind, start, end in get_entities(tags):
            out.add((index, kind, start, end, " ".join(words[start : end + 1]).lower()))
    return out


def main() -> None:
    corpus = load_corpus("wnut17", splits=("train", "test"))
    seen_forms = {e[4] for e in entities([s.tags for s in corpus.train], [s.words for s in corpus.train])}
    test_words = [s.words for s in corpus.test]
    gold = entities([s.tags for s in corpus.test], test_words)
    groups = {"seen": {e for e in gold if e[4] in seen_forms}, "unseen": {e for e in gold if e[4] not in seen_forms}}
    results = {"n_seen": len(groups["seen"]), "n_unseen": len(groups["unseen"]), "models": {}}
    for spec in sys.argv[1:]:
        name, path = spec.split("=", 1)
        tagger = Tagger.from_pretrained(path)
        probabilities = tagger.probabilities(test_words)
        for side, per_sentence in probabilities.items():
            predicted_tags = [[tagger.model.config.id2label[i] for i in p.argmax(-1).tolist()] for p in per_sentence]
            predicted = entities(predicted_tags, test_words)
            row = {group: len(members & predicted) / len(members) for group, members in groups.items()}
            row["predicted"] = len(predicted)
            row["precision"] = len(predicted & gold) / len(predicted) if predicted else 0.0
            results["models"][f"{name} ({side})"] = row
            print(name, side, row, flush=True)
    RESULTS_JSON.write_text(json.dumps(results, indent=2))
    lines = [f"| system (side) | recall, seen in train ({results['n_seen']}) | recall, unseen ({results['n_unseen']}) "
             "| predicted entities | precision |", "|---|---|---|---|---|"]
    for system, row in results["models"].items():
        lines.append(f"| {system} | {100 * row['seen']:.1f} | {100 * row['unseen']:.1f} | {row['predicted']} | "
                     f"{100 * row['precision']:.1f} |")
    command = "python benchmarks/wnut17_unseen.py " + " ".join(sys.argv[1:])
    replace_section(SECTION, "\n".join(lines) + f"\n\nProduced by `{command}`.")

if __name__ == "__main__":
    main()
