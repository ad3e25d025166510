"""TweetEval's own score of each committed TweetEval run, beside the macro-F1 the grid reports.

TweetEval (Barbieri et al., 2020) scores emoji, emotion, hate and offensive by macro-F1 over the
classes in the gold labels or the predictions (scikit-learn's), as the grid does, but irony by the F1 of the ironic class alone and stance by the mean
F1 of "against" and "favor" (tweets with neither stance count only through those two). Its one
Stance number pools the five topics' test tweets and scores the pool (cardiffnlp/tweeteval,
``evaluaton_script.py``), not the mean of the topics' scores, which is about 11 points lower here.
This probe reads each run's per-class F1 (``result.json``), and for the pooled stance score the
five topics' kept test predictions (``test_predictions.json.gz``), and gives TweetEval's numbers
per system and side, over the seeds (each topic's own score too).

    python benchmarks/tweeteval_official.py benchmarks/results/tweeteval/runs --output benchmarks/results/tweeteval/official.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
from collections import defaultdict
from pathlib import Path

from sklearn.metrics import f1_score

from entangle.bench import _stats

# The classes whose F1 TweetEval averages, where it does not use them all.
SCORED_CLASSES = {"tweeteval-irony": ("irony",), "stance": ("against", "favor")}
STANCE = "tweeteval-stance (5 topics pooled)"
STANCE_TOPICS = 5


def official_score(dataset: str, scores: dict) -> float:
    """TweetEval's score (percent) of one side's test scores."""
    classes = SCORED_CLASSES.get("stance" if dataset.startswith("tweeteval-stance-") else dataset)
    if classes is None:
        return 100 * scores["macro_f1"]
    per_class = scores["per_type"]
    return 100 * statistics.mean(per_class[name]["f1"] if name in per_class else 0.0 for name in classes)


def collect(runs: Path) -> dict:
    """{dataset: {system: {side: {seed: score}}}}, with the pooled stance score as one more dataset
    wherever a system and side kept the predictions of all five topics at a seed."""
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for path in sorted(runs.glob("*/*/seed-*/result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        for side, scores in result["test"].items():
            table[result["dataset"]][result["system"]][side][result["seed"]] = official_score(result["dataset"], scores)
    pooled: dict = defaultdict(lambda: ([], [], set()))  # (system, side, seed): gold, predicted, topics
    for path in sorted(runs.glob("tweeteval-stance-*/*/seed-*/test_predictions.json.gz")):
        result = json.loads((path.parent / "result.json").read_text(encoding="utf-8"))
        with gzip.open(path, "rt", encoding="utf-8") as file:
            kept = json.load(file)
        for side, predicted in kept["predicted"].items():
            gold, labels, topics = pooled[result["system"], side, result["seed"]]
            gold.extend(label for (label,) in kept["gold"])
            labels.extend(label for (label,) in predicted)
            topics.add(result["dataset"])
    for (system, side, seed), (gold, labels, topics) in pooled.items():
        if len(topics) == STANCE_TOPICS:
            scores = f1_score(gold, labels, labels=list(SCORED_CLASSES["stance"]), average=None, zero_division=0)
            table[STANCE][system][side][seed] = 100 * statistics.mean(scores)
    return table


def summarize(table: dict) -> dict:
    """Mean and spread over the seeds, as the grid's own report computes them."""
    def over_seeds(seeds: dict) -> dict:
        stats = _stats(list(seeds.values()))
        return {"mean": round(stats["mean"], 2), "std": round(stats["std"], 2),
                "per_seed": {str(k): round(v, 2) for k, v in sorted(seeds.items())}}

    return {dataset: {system: {side: over_seeds(seeds) for side, seeds in sides.items()}
                      for system, sides in systems.items()}
            for dataset, systems in sorted(table.items())}


def markdown(summary: dict) -> str:
    lines = ["| dataset | system | side | runs | TweetEval score |", "|---|---|---|---|---|"]
    for dataset, systems in summary.items():
        for system, sides in systems.items():
            for side, s in sides.items():
                lines.append(f"| {dataset} | {system} | {side} | {len(s['per_seed'])} | {s['mean']:.2f} ± {s['std']:.2f} |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", type=Path, help="a TweetEval grid's results directory (<dataset>/<system>/seed-N)")
    parser.add_argument("--output", type=Path, help="write the summary here as JSON")
    args = parser.parse_args()
    summary = summarize(collect(args.runs))
    if args.output:
        args.output.write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    print(markdown(summary))


if __name__ == "__main__":
    main()
