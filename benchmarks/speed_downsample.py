"""What character downsampling saves (``--char-downsample K``), or what the alignment bias costs
(``--compare alignment-bias``: an additive mask in the fused attention kernel): inference and
training passes of the two encoders alone and of m=2 at the default width with K = 1, 2 and 4 (or
without and with the bias), built on the same encoders and timed side by side in this one process
(``speed/width.py``'s method: the same WNUT-17 batches, a warm-up pass each, then alternating
rounds, medians). Untrained heads: speed does not depend on the weights' values.

    python benchmarks/speed_downsample.py   # -> benchmarks/results/speed_downsample.json
    python benchmarks/speed_downsample.py --compare alignment-bias   # -> .../speed_alignment_bias.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from functools import partial
from pathlib import Path

sys.path.insert(1, str(Path(__file__).resolve().parent / "speed"))  # the speed benchmark's modules

from common import RESULTS_DIR, alternating_timings, peak_mb  # noqa: E402
from width import WidthSystems  # noqa: E402

RATES = (1, 2, 4)
#: what each ``--compare`` times: system name -> ``from_encoders`` options
COMPARISONS = {
    "downsample": {f"entangle m=2, K={k}": dict(num_coattention_layers=2, side="both", char_downsample=k) for k in RATES},
    "alignment-bias": {f"entangle m=2{name}": dict(num_coattention_layers=2, side="both", alignment_bias=bias)
                       for name, bias in (("", False), (", alignment bias", True))},
}


def main() -> None:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sentences", type=int, default=128, help="WNUT-17 test sentences per inference pass")
    parser.add_argument("--steps", type=int, default=8, help="training steps (batch 16) per training pass")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", choices=list(COMPARISONS), default="downsample")
    parser.add_argument("--output", help="default: benchmarks/results/speed_<compare>.json")
    args = parser.parse_args()
    args.output = args.output or str(RESULTS_DIR / f"speed_{args.compare.replace('-', '_')}.json")
    bench = WidthSystems(args.sentences, args.steps, levers=False, variants=COMPARISONS[args.compare])
    rows = alternating_timings({name: {"infer": partial(bench.infer, name), "train": partial(bench.train, name)}
                                for name in bench.models}, args.rounds)
    words = sum(map(len, bench.test))
    for name, row in rows.items():
        row["parameters_m"] = sum(p.numel() for p in bench.models[name].parameters()) / 1e6
        row["infer_words_per_s"] = words / row["infer_s"]
        row["train_steps_per_s"] = len(bench.train_batches) / row["train_s"]
    result = {"systems": rows, "sentences": len(bench.test), "words": words, "train_steps": len(bench.train_batches),
              "rounds": args.rounds, "peak_mb": peak_mb(),
              "machine": {"cores": os.cpu_count(), "threads": torch.get_num_threads(), "torch": torch.__version__,
                          "python": platform.python_version(), "load_average": os.getloadavg()[0]},
              "command": "python " + " ".join(sys.argv)}
    with open(args.output, "w") as file:
        json.dump(result, file, indent=2)
    for name, row in rows.items():
        print(f"{name}: inference {row['infer_words_per_s']:.0f} words/s (overhead {row.get('infer_overhead', 0):+.0%}), "
              f"training {row['train_steps_per_s']:.2f} steps/s (overhead {row.get('train_overhead', 0):+.0%})")


if __name__ == "__main__":
    main()
