"""What the CharBERT-style baseline costs in training: optimizer steps/s against the subword
encoder alone, the same encoder (all-MiniLM-L6-v2), batch 16, WNUT-17 train windows.

The two are measured one after the other in this run, each in its own process
(``speed/common.py``'s ``measure``: two warm-up steps, then ``--steps`` timed steps of forward,
backward and AdamW).
Both wall-clock and CPU time are kept: on a machine shared with other jobs the wall clock of
one single-threaded process depends on their load, its CPU time hardly.

    OMP_NUM_THREADS=1 python benchmarks/charbert_speed.py     # writes results/charbert_speed.json and the RESULTS section
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
from pathlib import Path

from results_md import replace_section

sys.path.insert(1, str(Path(__file__).resolve().parent / "speed"))  # the speed benchmark's modules

from common import ROOT, measure  # noqa: E402

RESULTS_JSON = ROOT / "benchmarks" / "results" / "charbert_speed.json"
SYSTEMS = ("subword alone", "CharBERT-style")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    results = {"machine": {"cores": len(os.sched_getaffinity(0)), "omp_num_threads": os.environ.get("OMP_NUM_THREADS"),
                           "load_average_1min": os.getloadavg()[0], "python": platform.python_version(),
                           "cpu": platform.processor()},
               "command": "python benchmarks/charbert_speed.py " + " ".join(sys.argv[1:]), "steps": args.steps,
               "training": [{"system": system, **measure("train", system, args.steps)} for system in SYSTEMS]}
    RESULTS_JSON.write_text(json.dumps(results, indent=2))
    rows = {r["system"]: r for r in results["training"]}
    lines = ["| system | training steps/s (batch 16, wall clock) | steps per CPU second | data pipeline share of a step "
             "| peak memory |", "|---|---|---|---|---|"]
    for system, row in rows.items():
        if "steps_per_s" not in row:
            lines.append(f"| {system} | failed: {row.get('error')} | | | |")
            continue
        lines.append(f"| {system} | {row['steps_per_s']:.2f} | {row['steps_per_cpu_s']:.2f} | "
                     f"{100 * row['pipeline_share']:.1f}% | {row['peak_mb']:.0f} MB |")
    if all("steps_per_s" in row for row in rows.values()):
        wall, cpu = (rows["subword alone"][key] / rows["CharBERT-style"][key] for key in ("steps_per_s", "steps_per_cpu_s"))
        lines += ["", f"A CharBERT-style step takes **{cpu:.2f}×** the CPU time of a subword-alone step "
                  f"({wall:.2f}× the wall-clock time; wall clock varies with the machine's other load)."]
    machine = results["machine"]
    replace_section("charbert-speed", f"Machine: {machine['cores']} cores (load average {machine['load_average_1min']:.1f} "
                    f"at the start), OMP_NUM_THREADS={machine['omp_num_threads']}, "
                    f"Python {machine['python']}; {args.steps} timed steps each. Produced by "
                    f"`OMP_NUM_THREADS={machine['omp_num_threads']} {results['command'].strip()}`.\n\n" + "\n".join(lines),
                    heading="## CharBERT-style baseline: training speed (issue #5)")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
