"""WNUT-17 test entity F1: subword encoder alone vs the entanglement model's two sides.

Every system is trained with the same seed, epochs, batch size and learning rates through the
same ``entangle train`` code path; finished runs are skipped, so rerunning resumes the grid.
Results go to ``benchmarks/results/wnut17_sides.json`` and the table in ``benchmarks/RESULTS.md``.

    python benchmarks/wnut17_sides.py [--epochs 5] [--runs-dir runs/bench-wnut17]
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "wnut17_sides.json"
RESULTS_MD = ROOT / "benchmarks" / "RESULTS.md"
SECTION = "wnut17-sides"

#: name -> (extra train options, sides to report)
SYSTEMS = {
    "subword-alone (m=0)": (["-m", "0", "--side", "subword"], ["subword"]),
    "entangle m=1": (["-m", "1", "--side", "both"], ["subword", "char"]),
    "entangle m=2": (["-m", "2", "--side", "both"], ["subword", "char"]),
    "char-alone (m=0)": (["-m", "0", "--side", "char"], ["char"]),
}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def run(command: list[str]) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--runs-dir", default="runs/bench-wnut17")
    parser.add_argument("--only", nargs="*", help="run only these systems")
    parser.add_argument("--extra", nargs=argparse.REMAINDER, default=[], help="options passed to every train")
    args = parser.parse_args()
    common = ["--data", "wnut17", "--epochs", str(args.epochs), "--seed", str(args.seed), "--patience", "0", *args.extra]
    entangle = [sys.executable, "-m", "entangle.cli"]
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for name, (options, sides) in SYSTEMS.items():
        if args.only and name not in args.only:
            continue
        output = Path(args.runs_dir) / slug(name)
        test_file = output / "test_metrics.json"
        if not test_file.exists():
            run([*entangle, "train", *common, *options, "--output", str(output)])
            run([*entangle, "evaluate", str(output), "--data", "wnut17", "--output", str(test_file)])
        summary = json.loads((output / "train_summary.json").read_text())
        test = json.loads(test_file.read_text())["results"]
        results[name] = {
            "command": " ".join(["entangle", "train", *common, *options]),
            "train_time_s": summary["train_time_s"],
            "best_epoch": summary["best_epoch"],
            "sides": {side: {"dev_f1": summary["best_dev"][side]["f1"], "test_f1": test[side]["f1"],
                             "test_precision": test[side]["precision"], "test_recall": test[side]["recall"]}
                      for side in sides},
        }
        RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
        RESULTS_JSON.write_text(json.dumps(results, indent=2))
        write_table(results, args)


def write_table(results: dict, args: argparse.Namespace) -> None:
    rows = ["| system | side | dev F1 | test F1 | test P | test R | best epoch | training time |",
            "|---|---|---|---|---|---|---|---|"]
    for name, result in results.items():
        for side, s in result["sides"].items():
            rows.append(f"| {name} | {side} | {100 * s['dev_f1']:.2f} | **{100 * s['test_f1']:.2f}** | "
                        f"{100 * s['test_precision']:.2f} | {100 * s['test_recall']:.2f} | {result['best_epoch']} | "
                        f"{result['train_time_s'] / 60:.1f} min |")
    commands = "\n".join(f"    {r['command']}" for r in results.values())
    table = "\n".join(rows)
    body = (f"<!-- {SECTION}:start -->\n{table}\n\nProduced by `python benchmarks/wnut17_sides.py "
            f"--epochs {args.epochs} --seed {args.seed}`, which runs:\n\n{commands}\n<!-- {SECTION}:end -->")
    text = RESULTS_MD.read_text() if RESULTS_MD.exists() else "# Results\n"
    pattern = re.compile(f"<!-- {SECTION}:start -->.*<!-- {SECTION}:end -->", re.S)
    text = pattern.sub(lambda _: body, text) if pattern.search(text) else text.rstrip() + "\n\n" + body + "\n"
    RESULTS_MD.write_text(text)


if __name__ == "__main__":
    main()
