"""Peak memory of one CPU training step of the default model on long texts: attention in slices of
queries (``entangle.modeling.coattention.CHUNKED_ATTENTION_SCORES``) against the whole attention.

On the CPU no fused attention kernel applies dropout, so training kept every co-attention score,
its softmax and its dropout for the backward pass: TweetEval irony's one line of 1,000 characters
took a default run to 15.7 GB. Each measurement is a fresh process (peak memory is per process)
training one step on 16 texts of N characters (common English words, two labels), batch 16.

    python benchmarks/long_text_memory.py --output benchmarks/results/long_text_memory.json
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Text lengths in characters; the whole attention is measured only up to ``WHOLE_UP_TO`` (at
#: 2,000 characters it would need about four times the memory it needs at 1,000).
LENGTHS = (250, 500, 1000, 2000)
WHOLE_UP_TO = 1000

# One training step in a fresh process, with the slicing threshold set from the command line.
STEP = """
import sys
from entangle.modeling import coattention
coattention.CHUNKED_ATTENTION_SCORES = float(sys.argv[1]) if sys.argv[1] == "inf" else int(sys.argv[1])
from entangle.cli import main
main(["train", "--train", sys.argv[2], "--dev", sys.argv[2], "--max-steps", "1", "--epochs", "1",
      "--output", sys.argv[3]])
"""


#: Common English words, so that the subword side is as long as on real text (about a piece per
#: four characters): random letters would split into several times as many.
WORDS = ("the people who live in this city say that they have never seen such a long winter before and "
         "some of them think it will go on until the middle of next year when the river rises again").split()


def texts(length: int, count: int = 16, seed: int = 0) -> list[str]:
    draw = random.Random(seed)
    out = []
    for _ in range(count):
        words: list[str] = []
        while sum(map(len, words)) + len(words) < length:
            words.append(draw.choice(WORDS))
        out.append(" ".join(words)[:length])
    return out


def measure(length: int, threshold: int | float, folder: Path) -> dict:
    table = folder / f"train-{length}.tsv"
    rows = [f"{text}\t{'ab'[i % 2]}" for i, text in enumerate(texts(length))]
    table.write_text("text\tlabel\n" + "\n".join(rows) + "\n", encoding="utf-8")
    output = folder / f"run-{length}-{threshold}"
    started = time.perf_counter()
    subprocess.run([sys.executable, "-c", STEP, str(threshold), str(table), str(output)], check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    summary = json.loads((output / "train_summary.json").read_text())
    return {"chars": length, "peak_memory_mb": round(summary["peak_memory_mb"]),
            "train_time_s": summary["train_time_s"], "wall_time_s": round(time.perf_counter() - started, 1)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--output", type=Path, help="write the results here as JSON")
    args = parser.parse_args()
    from entangle.modeling.coattention import CHUNKED_ATTENTION_SCORES

    results = {"command": "python benchmarks/long_text_memory.py", "batch": 16, "sliced": [], "whole": []}
    with tempfile.TemporaryDirectory() as folder:
        for length in LENGTHS:
            results["sliced"].append(measure(length, CHUNKED_ATTENTION_SCORES, Path(folder)))
            if length <= WHOLE_UP_TO:
                results["whole"].append(measure(length, float("inf"), Path(folder)))
            print(json.dumps({key: value[-1] for key, value in results.items() if isinstance(value, list)}))
    print("| characters | whole attention, peak MB | in slices, peak MB | train time s (whole / sliced) |")
    print("|---|---|---|---|")
    for sliced in results["sliced"]:
        whole = next((w for w in results["whole"] if w["chars"] == sliced["chars"]), None)
        print(f"| {sliced['chars']} | {whole['peak_memory_mb'] if whole else 'not run'} | {sliced['peak_memory_mb']} | "
              f"{whole['train_time_s'] if whole else '–'} / {sliced['train_time_s']} |")
    if args.output:
        args.output.write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
