"""Start-up time of ``entangle --help``: this checkout against another one (e.g. an older commit in a
``git worktree``), alternating runs, each a fresh process (``python -m entangle.cli --help`` with
the checkout as the working directory, so its own package is imported). CPU time is read from the
finished child's resource usage, so a busy machine inflates the wall time more than the CPU time.

    git worktree add /tmp/before 902fdac
    python benchmarks/startup.py --other /tmp/before --runs 7 --output benchmarks/results/startup.json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]


def one_run(checkout: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds) of one ``entangle --help`` in ``checkout``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "entangle.cli", "--help"], cwd=checkout, check=True,
                   stdout=subprocess.DEVNULL, env={**os.environ, "PYTHONPATH": str(checkout)})
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--other", help="another checkout to time beside this one")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--output", required=True)
    args = parser.parse_args()
    checkouts = {"this": HERE, **({"other": Path(args.other)} if args.other else {})}
    for checkout in checkouts.values():
        one_run(checkout)  # warm-up: the file cache
    times: dict[str, list[tuple[float, float]]] = {name: [] for name in checkouts}
    for _ in range(args.runs):
        for name, checkout in checkouts.items():
            times[name].append(one_run(checkout))
    record = {"command": "python " + " ".join(sys.argv), "cpus": os.cpu_count(), "load_average": os.getloadavg(),
              **{name: {"checkout": str(checkouts[name]), "wall_s_median": round(statistics.median(w for w, _ in runs), 3),
                        "cpu_s_median": round(statistics.median(c for _, c in runs), 3), "runs": runs}
                 for name, runs in times.items()}}
    Path(args.output).write_text(json.dumps(record, indent=2))
    for name in checkouts:
        print(f"{name}: wall {record[name]['wall_s_median']} s, CPU {record[name]['cpu_s_median']} s (median of {args.runs})")


if __name__ == "__main__":
    main()
