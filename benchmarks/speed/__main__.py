"""What entanglement costs: throughput, memory and scaling of the embedded defaults on this machine.

Every measurement runs in its own process, so its peak memory (max RSS) is its own. Models are
built with the embedded defaults (built-in character encoder, all-MiniLM-L6-v2) and untrained
heads: speed does not depend on the weights' values. Each part is a module of this directory
(``--part paper-size`` is ``paper_size.py``): its measurements and its results section; what the
parts share is in ``common.py``.

    python benchmarks/speed                  # every part; each writes its JSON and its RESULTS section
    python benchmarks/speed --part backends  # one part: benchmarks/results/speed_backends.json
"""

from __future__ import annotations

import argparse
import json
import sys
import textwrap
from pathlib import Path

# This directory is sys.path[0] (``python benchmarks/speed``); benchmarks/ holds results_md.
sys.path.insert(1, str(Path(__file__).resolve().parent.parent))

import autocast  # noqa: E402
import backends  # noqa: E402
import cost  # noqa: E402
import fused  # noqa: E402
import grid  # noqa: E402
import levers  # noqa: E402
import paper_size  # noqa: E402
import width  # noqa: E402
from common import machine_info, measure, peak_mb  # noqa: E402

#: part -> its module (``RESULTS_JSON``, ``SECTION``, ``MEASUREMENTS``, ``write_section``), in the order they run
PARTS = {"grid": grid, "backends": backends, "paper-size": paper_size, "width": width, "cost": cost,
         "fused": fused, "levers": levers, "autocast": autocast}


def description() -> str:
    """This docstring, each part's docstring inserted before the usage lines."""
    head, usage = __doc__.rsplit("\n\n", 1)
    parts = "\n\n".join(textwrap.indent(module.__doc__.strip(), "  ") for module in PARTS.values())
    return f"{head}\n\n{parts}\n\n{usage}"


def one(kind: str, arguments: list[str]) -> None:
    """Run one measurement in this process and print it as JSON with the process's peak memory."""
    functions = {name: run for module in PARTS.values() for name, run in module.MEASUREMENTS.items()}
    result = functions[kind](*arguments)
    print(json.dumps({**result, "peak_mb": peak_mb()}))


def main() -> None:
    parser = argparse.ArgumentParser(description=description(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", nargs="+", choices=list(PARTS), default=list(PARTS),
                        help="which measurements to run (default: all); each part rewrites only its own results")
    parser.add_argument("--sentences", type=int, default=256, help="test sentences per inference measurement")
    parser.add_argument("--train-steps", type=int, default=20)
    parser.add_argument("--fixed-sentences", type=int, default=128, help="WNUT-17 test sentences for the fixed-padding comparison")
    parser.add_argument("--backend-sentences", type=int, nargs=2, default=(128, 32), metavar=("BATCH32", "BATCH1"),
                        help="WNUT-17 test sentences per back-end pass at batch 32 and at batch 1")
    parser.add_argument("--paper-sentences", type=int, default=64, help="WNUT-17 test sentences for the paper-size part")
    parser.add_argument("--width-sentences", type=int, default=128, help="WNUT-17 test sentences for the width part")
    parser.add_argument("--width-steps", type=int, default=8, help="training steps (batch 16) per pass in the width part")
    parser.add_argument("--autocast-models", nargs="+", default=[], metavar="DIR",
                        help="trained WNUT-17 model directories for the autocast part")
    parser.add_argument("--autocast-sentences", type=int, default=256, help="WNUT-17 test sentences per autocast pass")
    parser.add_argument("--one", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        return one(args.one[0], args.one[1:])

    machine = machine_info()
    command = "python benchmarks/speed " + " ".join(sys.argv[1:])
    for part in args.part:
        results = {"machine": machine, "command": command}
        if part == "grid":
            results.update(grid.measure_grid(args))
        elif part == "backends":
            results["backends"] = backends.measure_backends(args)
        elif part == "width":
            results["width"] = measure("width", args.width_sentences, args.width_steps)
        elif part == "cost":
            results["cost"] = measure("cost", args.width_sentences, args.width_steps)
        elif part == "fused":
            results["fused"] = measure("fused", args.width_sentences, args.width_steps)
        elif part == "levers":
            results["levers"] = measure("levers", args.width_sentences, args.width_steps)
        elif part == "autocast":
            if not args.autocast_models:
                parser.error("--part autocast needs --autocast-models (trained WNUT-17 model directories)")
            results["autocast"] = [measure("autocast", model, 32, args.autocast_sentences) for model in args.autocast_models]
        else:
            results["paper_size"] = [{"encoders": encoders, "batch": 32, **measure("paper", encoders, 32, args.paper_sentences)}
                                     for encoders in ("embedded", "paper")]
        module = PARTS[part]
        module.RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
        module.RESULTS_JSON.write_text(json.dumps(results, indent=2))
        module.write_section(results)


if __name__ == "__main__":
    main()
