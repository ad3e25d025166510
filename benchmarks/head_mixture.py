"""Would the trained heads do better together? Each saved model's dev and test scores from each
head alone and from the mean of the heads' label probabilities (decoded as the task decodes one
head's), from one forward pass per split. Asked once the alignment bias made the character head
about as good as the joint head (session 24): if the mean is better on dev, the heads err on
different words.

    python benchmarks/head_mixture.py MODEL_DIR [MODEL_DIR ...] --data wnut17 --output out.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def scores(tagger, examples: list) -> dict[str, float]:
    """The task's main score of each head and of the mean of all heads' probabilities."""
    probabilities = tagger.probabilities([example.words for example in examples])
    probabilities["mean of heads"] = [sum(per_side) / len(per_side) for per_side in zip(*probabilities.values())]
    task = tagger.task
    return {side: task.score(examples, [task.decode(p, tagger.labels, tagger.decoding)[0] for p in per_example])
            [task.main_score] for side, per_example in probabilities.items()}


def main() -> None:
    from entangle.data.corpus import load_corpus
    from entangle.predict import Tagger

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("models", nargs="+", help="saved model directories")
    parser.add_argument("--data", required=True)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    corpus = load_corpus(args.data)
    rows = {}
    for model in args.models:
        tagger = Tagger.from_pretrained(model, device=None)
        rows[model] = {split: scores(tagger, corpus.split(split)) for split in ("dev", "test")}
        print(model, json.dumps(rows[model]))
    Path(args.output).write_text(json.dumps({"models": rows, "data": args.data,
                                             "command": "python " + " ".join(sys.argv)}, indent=2) + "\n")


if __name__ == "__main__":
    main()
