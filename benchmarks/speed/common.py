"""What the parts of the speed benchmark share: the systems, the data, the timing loops, the
child-process plumbing (every measurement runs in its own process, so its peak memory, max RSS,
is its own) and the machine line of the results sections."""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from results_md import replace_section

ROOT = Path(__file__).resolve().parents[2]
RESULTS_DIR = ROOT / "benchmarks" / "results"
#: what ``measure`` runs in a child process: this directory, as ``python benchmarks/speed`` does
ENTRY = Path(__file__).resolve().parent
LABELS = ["O", "B-X", "I-X"]
#: name -> Tagger.create options
SYSTEMS = {"char alone": dict(coattention_layers=0, side="char"),
           "subword alone": dict(coattention_layers=0, side="subword"),
           "entangle m=1": dict(coattention_layers=1), "entangle m=2": dict(coattention_layers=2),
           "entangle m=4": dict(coattention_layers=4), "CharBERT-style": dict(fusion="charbert")}


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tagger(system: str, batch_size: int, labels: list[str] = LABELS):
    from entangle.predict import Tagger

    return Tagger.create("builtin", "minilm", labels, batch_size=batch_size, **SYSTEMS[system])


def test_words(dataset: str, n: int) -> list[list[str]]:
    from entangle.data.corpus import load_corpus

    return [s.words for s in load_corpus(dataset, task="tagging", splits=("test",)).split("test")[:n]]


def training_windows(model, sentences: list) -> list:
    """Labelled windows of tagged sentences for a ``Tagger``, the labels numbered by its config."""
    label2id = model.model.config.label2id
    return model.featurizer.featurize([s.words for s in sentences], [[label2id[t] for t in s.tags] for s in sentences])


def alternating_passes(taggers: dict, sentences: list[list[str]], warmup: int, rounds: int,
                       sides: tuple[str, ...] | None = None) -> dict:
    """``{name: {"warmup_s", "passes", "words_per_s"}}``: each tagger's probabilities on
    ``sentences``, the taggers' passes alternating (a change in the machine's load hits all
    alike) after a warm-up on the first ``warmup`` sentences; words/s is the median of ``rounds``."""
    import statistics

    words = sum(map(len, sentences))
    results = {}
    for name, model in taggers.items():
        start = time.perf_counter()
        model.probabilities(sentences[:warmup], sides)
        results[name] = {"warmup_s": time.perf_counter() - start, "passes": []}
    for _ in range(rounds):
        for name, model in taggers.items():
            start = time.perf_counter()
            model.probabilities(sentences, sides)
            results[name]["passes"].append(words / (time.perf_counter() - start))
    for row in results.values():
        row["words_per_s"] = statistics.median(row["passes"])
    return results


def alternating_timings(runs: dict[str, dict[str, Callable[[], None]]], rounds: int) -> dict[str, dict]:
    """``{system: {key: pass}}`` timed side by side: a warm-up of each pass (``{key}_warmup_s``: a
    first training pass allocates the optimizer's state, a first compiled pass compiles), then
    ``rounds`` of every pass, alternating, so that a change in the machine's load hits all alike.
    Per system and key: the times (``passes``), their median (``{key}_s``) and, where both were
    timed, the overhead over the two encoders alone ("char alone" + "subword alone") on the same
    key (``{key}_overhead``)."""
    import statistics

    rows = {name: {"passes": {key: [] for key in passes}} for name, passes in runs.items()}
    for name, passes in runs.items():
        for key, run in passes.items():
            start = time.perf_counter()
            run()
            rows[name][f"{key}_warmup_s"] = time.perf_counter() - start
    for _ in range(rounds):
        for name, passes in runs.items():
            for key, run in passes.items():
                start = time.perf_counter()
                run()
                rows[name]["passes"][key].append(time.perf_counter() - start)
    for row in rows.values():
        row.update({f"{key}_s": statistics.median(times) for key, times in row["passes"].items()})
    floor = [rows[name] for name in ("char alone", "subword alone") if name in rows]
    for row in rows.values():
        for key in row["passes"]:
            if len(floor) == 2 and all(key in encoder["passes"] for encoder in floor):
                row[f"{key}_overhead"] = row[f"{key}_s"] / sum(encoder[f"{key}_s"] for encoder in floor) - 1
    return rows


def measure(kind: str, *arguments) -> dict:
    """One measurement (``kind``: a key of a part's ``MEASUREMENTS``) in a child process of its own,
    its result with the child's peak memory, or ``{"error": last line of its stderr}``."""
    print("measuring", kind, *arguments, file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, str(ENTRY), "--one", kind, *map(str, arguments)],
                          capture_output=True, text=True)
    if done.returncode:
        return {"error": (done.stderr.strip().splitlines() or ["killed"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def machine_info() -> dict:
    import torch

    return {"cores": len(os.sched_getaffinity(0)), "threads": torch.get_num_threads(),
            "torch": torch.__version__, "python": platform.python_version(), "cpu": platform.processor(),
            "load_average": os.getloadavg()[0]}


def cell(row: dict, key: str, fmt: str) -> str:
    return format(row[key], fmt) if key in row else f"failed: {row.get('error', '?')}"


def machine_line(results: dict) -> str:
    machine = results["machine"]
    load = f" (load average {machine['load_average']:.1f} at the start)" if "load_average" in machine else ""
    return (f"Machine: {machine['cores']} cores{load}, {machine['threads']} torch thread(s) "
            f"(ONNX Runtime: as many), torch {machine['torch']}, Python {machine['python']}. Produced by "
            f"`{results['command'].strip()}`.")


def overhead_cell(name: str, row: dict, key: str) -> str:
    """An overhead cell; empty for an encoder alone, which is part of the floor itself."""
    return "" if name.endswith("alone") else f"{100 * row[f'{key}_overhead']:+.0f}%"


def failed(results: dict, part: str, section: str) -> bool:
    """Whether the part's measurement failed; if so, its section says why."""
    if "systems" in results[part]:
        return False
    replace_section(section, machine_line(results) + f"\n\nfailed: {results[part].get('error', '?')}")
    return True
