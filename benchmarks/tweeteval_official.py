"""TweetEval's own score of each committed TweetEval run, beside the macro-F1 the grid reports.

TweetEval (Barbieri et al., 2020) scores emoji, emotion, hate and offensive by macro-F1 over all
classes, as the grid does, but irony by the F1 of the ironic class alone and stance by the mean
F1 of "against" and "favor" (tweets with neither stance count only through those two), its one
Stance number being the mean over the five topics. This probe reads each run's per-class F1
(``result.json``) and gives TweetEval's numbers per system and side, over the seeds.

    python benchmarks/tweeteval_official.py benchmarks/results/tweeteval/runs --output benchmarks/results/tweeteval/official.json
"""

from __future__ import annotations

import argparse
import json
import statistics
from collections import defaultdict
from pathlib import Path

from entangle.bench import _stats

# The classes whose F1 TweetEval averages, where it does not use them all.
SCORED_CLASSES = {"tweeteval-irony": ("irony",), "stance": ("against", "favor")}
STANCE = "tweeteval-stance (5 topics)"


def official_score(dataset: str, scores: dict) -> float:
    """TweetEval's score (percent) of one side's test scores."""
    classes = SCORED_CLASSES.get("stance" if dataset.startswith("tweeteval-stance-") else dataset)
    if classes is None:
        return 100 * scores["macro_f1"]
    per_class = scores["per_type"]
    return 100 * statistics.mean(per_class[name]["f1"] if name in per_class else 0.0 for name in classes)


def collect(runs: Path) -> dict:
    """{dataset: {system: {side: {seed: score}}}}, with the stance topics' mean as one more dataset
    wherever a system and side has all five topics at a seed."""
    table: dict = defaultdict(lambda: defaultdict(lambda: defaultdict(dict)))
    for path in sorted(runs.glob("*/*/seed-*/result.json")):
        result = json.loads(path.read_text(encoding="utf-8"))
        for side, scores in result["test"].items():
            table[result["dataset"]][result["system"]][side][result["seed"]] = official_score(result["dataset"], scores)
    topics = [name for name in table if name.startswith("tweeteval-stance-")]
    if len(topics) == 5:
        for system, sides in table[topics[0]].items():
            for side, seeds in sides.items():
                for seed in seeds:
                    per_topic = [table[t].get(system, {}).get(side, {}).get(seed) for t in topics]
                    if None not in per_topic:
                        table[STANCE][system][side][seed] = statistics.mean(per_topic)
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
