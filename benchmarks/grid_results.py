"""Copy a bench grid's finished results into the repository: its tables, summary and plots go to
``benchmarks/results/<grid>/`` (``benchmarks/RESULTS.md`` links to each grid's ``RESULTS.md``
there). Runs nothing new (``entangle bench --report-only``).

    python benchmarks/grid_results.py benchmarks/tweebank_grid.yaml [more configs]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
from pathlib import Path

from entangle.bench import BenchConfig, BenchConfigError, BenchRunError, plot_file, run_bench

RESULTS_DIR = Path(__file__).resolve().parent / "results"


def copy_report(config: BenchConfig, target: Path) -> list[Path]:
    """Write the grid's report from its finished runs and copy it into ``target``: ``RESULTS.md``,
    ``summary.json`` and the plots it links, nothing else. A plot there that the report no longer
    links (a dataset since dropped from the grid) is removed: a copy of every PNG in the output
    directory carried such stale plots along. The files copied."""
    run_bench(config, report_only=True)
    output = Path(config.output)
    # One plot per dataset of the summary, named as the report names it.
    plots = [plot_file(dataset) for dataset in json.loads((output / "summary.json").read_text())["summary"]]
    target.mkdir(parents=True, exist_ok=True)
    for stale in set(target.glob("*.png")) - {target / name for name in plots}:
        stale.unlink()
    copied = []
    for name in ("RESULTS.md", "summary.json", *plots):
        copied.append(Path(shutil.copy(output / name, target / name)))
    return copied


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("configs", nargs="+")
    for path in parser.parse_args().configs:
        try:
            config = BenchConfig.from_file(path)
            copy_report(config, RESULTS_DIR / Path(config.output).name)
        except (BenchConfigError, BenchRunError, OSError) as err:  # one line, as entangle bench says it
            message = str(err)
            sys.exit(f"grid_results: error: {message if path in message else f'{path}: {message}'}")


if __name__ == "__main__":
    main()
