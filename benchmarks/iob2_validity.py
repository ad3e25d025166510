"""How often committed grid predictions break IOB2, and what that costs in strict entity F1.

The committed grids kept each run's predicted tags (argmax per word), not its probabilities, so
constrained decoding cannot be re-run on them without the models. This probe measures the
two things the tags do show, per system and side, over a grid's seeds: the share of predicted
``I-X`` tags that follow ``O`` or another type (invalid in IOB2), and test F1 when the strict
reading (seqeval strict IOB2: such tags start no entity) is replaced by the lenient one
(conlleval's: they start an entity). The lenient reading approximates what a decoder that
repairs each invalid tag would score; constrained Viterbi decoding itself (``entangle evaluate
--decoding``) needs the probabilities.

    python benchmarks/iob2_validity.py benchmarks/results/paper-grid/runs --output benchmarks/results/iob2_validity.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from pathlib import Path

from seqeval.metrics import f1_score
from seqeval.scheme import IOB2


def invalid_inside_tags(sequences: list[list[str]]) -> tuple[int, int]:
    """(invalid ``I-`` tags, all ``I-`` tags)."""
    invalid = total = 0
    for tags in sequences:
        previous = "O"
        for tag in tags:
            if tag.startswith("I-"):
                total += 1
                invalid += previous[2:] != tag[2:]
            previous = tag
    return invalid, total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", help="a grid's committed runs directory (DATASET/SYSTEM/seed-N/test_predictions.json.gz)")
    parser.add_argument("--datasets", nargs="+", default=["wnut17", "conll2003"], help="NER datasets of the grid")
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    rows = []
    for dataset in (Path(args.runs) / name for name in args.datasets):
        for system in sorted(p for p in dataset.iterdir() if p.is_dir()):
            per_side: dict[str, list[dict]] = {}
            for seed in sorted(system.glob("seed-*/test_predictions.json.gz")):
                record = json.load(gzip.open(seed))
                for side, predicted in record["predicted"].items():
                    invalid, inside = invalid_inside_tags(predicted)
                    per_side.setdefault(side, []).append({
                        "strict_f1": 100 * f1_score(record["gold"], predicted, mode="strict", scheme=IOB2),
                        "lenient_f1": 100 * f1_score(record["gold"], predicted),
                        "invalid_inside": invalid, "inside": inside})
            for side, seeds in per_side.items():
                mean = {k: statistics.mean(s[k] for s in seeds) for k in ("strict_f1", "lenient_f1")}
                rows.append({"dataset": dataset.name, "system": system.name, "side": side, "seeds": len(seeds),
                             **{k: round(v, 2) for k, v in mean.items()},
                             "lenient_minus_strict": round(mean["lenient_f1"] - mean["strict_f1"], 2),
                             "invalid_inside_share": round(sum(s["invalid_inside"] for s in seeds)
                                                           / max(1, sum(s["inside"] for s in seeds)), 4)})
                print("\t".join(str(v) for v in rows[-1].values()))
    Path(args.output).write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
