"""Keep a finished grid run's predictions on the noisy copies of test, for runs scored before
``entangle bench`` kept them (session 30), so that the grid's comparisons get paired-bootstrap
intervals on those copies too. The run's model and the copies its scoring wrote must still be in
its run folder; the scores must come out as ``result.json`` recorded them, or nothing is kept.

    python benchmarks/keep_noisy_predictions.py benchmarks/informed_char.yaml --dataset conll2003 \\
        --system "CharBERT-style, train noise 0.3" --seeds 43 44 --tests charbert@1.0
    entangle bench benchmarks/informed_char.yaml --report-only
"""

import argparse
import sys
import tempfile
from pathlib import Path

from entangle.bench import (BenchConfig, data_options, evaluate_run, finished_result, keep_predictions,
                            noisy_test_paths, predictions_file, resolved_options, result_dir, run_dir,
                            train_arguments)


def keep(config: BenchConfig, dataset: str, system: str, seed: int, variant: str) -> None:
    result = finished_result(config, dataset, system, seed)
    directory, target = run_dir(config, dataset, system, seed), result_dir(config, dataset, system, seed)
    reading = data_options(resolved_options(train_arguments(config, dataset, system, seed)))  # as the run read it
    copy = noisy_test_paths(directory, variant, dataset, reading.get("data_dir"))[0]
    if result is None or variant not in result.get("noisy_test", {}) or not (directory / "model").is_dir() or not copy.is_file():
        sys.exit(f"{directory}: needs a finished run scored on {variant}, with its model and {copy.name} still there")
    with tempfile.TemporaryDirectory() as scratch:
        scores, predictions = Path(scratch) / "scores.json", Path(scratch) / "predictions.json"
        if evaluate_run(directory, copy, scores, predictions, reading=reading)["results"] != result["noisy_test"][variant]:
            sys.exit(f"{directory}: {variant} scores differ from {target / 'result.json'}'s; nothing kept")
        keep_predictions(predictions, target / predictions_file(variant))
    print(f"{target / predictions_file(variant)}: kept ({variant} scores as recorded)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("grid")
    parser.add_argument("--dataset", required=True)
    parser.add_argument("--system", required=True)
    parser.add_argument("--seeds", type=int, nargs="+", required=True)
    parser.add_argument("--tests", nargs="+", required=True, help="noisy copies, ATTACK@RATE as the grid names them")
    args = parser.parse_args()
    config = BenchConfig.from_file(args.grid)
    for seed in args.seeds:
        for variant in args.tests:
            keep(config, args.dataset, args.system, seed, variant)


if __name__ == "__main__":
    main()
