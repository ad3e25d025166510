"""Copy a bench grid's finished results into the repository: its tables, summary and plots go to
``benchmarks/results/<grid>/`` (``benchmarks/RESULTS.md`` links to each grid's ``RESULTS.md``
there). Runs nothing new (``entangle bench --report-only``).

    python benchmarks/grid_results.py benchmarks/tweebank_grid.yaml [more configs]
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from entangle.bench import BenchConfig, run_bench

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+")
    for path in parser.parse_args().configs:
        config = BenchConfig.from_file(path)
        run_bench(config, report_only=True)
        name = Path(config.output).name
        target = RESULTS_DIR / name
        target.mkdir(parents=True, exist_ok=True)
        for produced in Path(config.output).glob("*"):
            if produced.suffix in (".md", ".json", ".png"):
                shutil.copy(produced, target / produced.name)


if __name__ == "__main__":
    main()
