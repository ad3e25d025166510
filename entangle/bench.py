"""``entangle bench CONFIG``: the paper's protocol as one command.

A grid of datasets x systems x seeds, every system trained with the same budget through the
same ``entangle train`` code path. Each finished run leaves ``result.json`` (metrics, options,
seed, versions, wall time, peak memory) and its test predictions in its own directory under
``results``, so rerunning skips it; a run that was interrupted continues from its checkpoint in
``output``, where a finished run keeps its model and deletes its checkpoint. ``results`` holds
only small files, apart from the models and checkpoints, so that it can be committed: a grid of
many hours then goes on across sessions and machines. From the
results: one Markdown table per dataset (mean ± standard deviation over seeds, best per column in
bold, number of runs), a JSON summary,
a plot of score against m per dataset, and, for each comparison listed, the per-seed
differences with a paired bootstrap confidence interval over test sentences, on the clean test
set and on each noisy copy, over the seeds whose runs kept their predictions there (older runs
get them from ``benchmarks/keep_noisy_predictions.py``).

The configuration (YAML or JSON)::

    output: runs/bench                           # models and checkpoints
    results: benchmarks/results/bench/runs       # result.json + test predictions per run (default: output)
    datasets: [wnut17, conll2003]
    seeds: [42, 43, 44]
    train: {epochs: 3, batch-size: 16}          # the budget every system gets (entangle train options)
    systems:                                     # name -> entangle train options of that system
      subword alone: {m: 0, side: subword}
      char alone: {m: 0, side: char}
      entangle m=1: {m: 1, side: both}
      entangle m=2: {m: 2, side: both}
    compare: ["entangle m=2:subword", "subword alone:subword"]   # system:side minus system:side
    # or several: [["entangle m=2:subword", "subword alone:subword"], ["entangle m=2:char", "char alone:char"]]
    macro_average: true                          # also one table averaged over the datasets

Its paths (``output``, ``results``, a system's ``config:`` file, a dataset given as a path) are
read from the directory bench runs in, as the ``entangle train`` options they become are: the
committed grids under ``benchmarks/`` run from the repository's root.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time
import unicodedata
from argparse import ArgumentTypeError
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path

from .arguments import (check_one_name_each, data_option_names, negatable_train_options, parse_args, read_yaml, share,
                        train_defaults, train_option_names)
from .data.conllu import is_conllu
from .data.corpus import data_task, default_task, split_files
from .data.datasets import DATASETS
from .noise import ATTACK_NAMES
from .options import CHECKPOINT_DIR, MAX_SEED, RUN_ARGS, ConfigError, UsageError, read_record, trained_sides
from .plots import pyplot
from .schema import MODEL_FIELDS, ModelOptions, TrainingOptions, upgraded, values_of
from .tasks import Task, get_task

RESULT = "result.json"
#: The heads a run is scored on, as a ``compare`` entry names them (``system:side``).
SCORED_SIDES = ("subword", "char", "joint")
PREDICTIONS = "test_predictions.json.gz"


def predictions_file(variant: str | None = None) -> str:
    """The kept test predictions: the clean test set's, or those of its noisy copy ``ATTACK@RATE``."""
    if variant is None:
        return PREDICTIONS
    attack, _, rate = variant.partition("@")
    return f"test_predictions_{attack}_{rate}.json.gz"


def noisy_test_paths(directory: Path, variant: str, dataset: str, data_dir: str | None = None) -> tuple[Path, Path, Path]:
    """In a run's folder: the noisy copy ``ATTACK@RATE`` of ``dataset``'s test set, the scores on it and
    the predictions. The copy keeps the test file's format, and files are read by their suffix, so a
    CoNLL-U test set's copy is ``.conllu``."""
    attack, _, rate = variant.partition("@")
    stem = f"test_{attack}_{rate}"  # the rate's dot is not a suffix
    suffix = ".conllu" if is_conllu(split_files(dataset, data_dir)[0]["test"]) else ".txt"
    return directory / f"{stem}{suffix}", directory / f"{stem}.json", directory / f"{stem}_predictions.json"


def evaluate_run(directory: Path, data: str | Path, scores: Path, predictions: Path, env: dict | None = None,
                 reading: dict | None = None) -> dict:
    """``entangle evaluate`` of a run's model on ``data`` (a dataset name or a file), in a process of
    its own, read with the run's ``reading`` options (:func:`data_options`): its scores (written to
    ``scores``), its predictions written to ``predictions``."""
    subprocess.run([sys.executable, "-m", "entangle.cli", "evaluate", str(directory), "--data", str(data),
                    *_options(reading or {}), "--output", str(scores), "--predictions", str(predictions)],
                   check=True, env=env)
    return json.loads(scores.read_text())


def keep_predictions(source: Path, target: Path) -> None:
    """Gzipped with a fixed mtime: the same predictions give the same bytes, so a rerun leaves git nothing to commit."""
    with gzip.GzipFile(target, "wb", mtime=0) as file:
        file.write(source.read_bytes())


class BenchConfigError(ValueError):
    """A benchmark configuration that cannot be run; the message names the file."""


class BenchRunError(RuntimeError):
    """A run of the grid failed; the message names its directory."""


@dataclass
class BenchConfig:
    output: str
    datasets: list[str]
    systems: dict[str, dict]
    seeds: list[int] = field(default_factory=lambda: [42])
    train: dict = field(default_factory=dict)
    # ["system:side", "system:side"]: first minus second; or a list of such pairs (the headline first)
    compare: list | None = None
    bootstrap: int = 1000
    macro_average: bool = False  # a table of each system and side averaged over the datasets
    results: str | None = None  # where each run's result and predictions go (default: output)
    # Noisy copies of each test set the runs are also scored on ("ATTACK@RATE", entangle perturb, seed 0).
    noisy_tests: list[str] = field(default_factory=list)

    @classmethod
    def from_file(cls, path: str | Path) -> "BenchConfig":
        path = Path(path)
        values = read_yaml(path)
        if not isinstance(values, dict):
            raise BenchConfigError(f"{path}: expected a mapping (output, datasets, systems, ...)")
        unknown = sorted(map(str, set(values) - set(cls.__dataclass_fields__)))
        values = {key: value for key, value in values.items() if value is not None}  # null: the field's default
        missing = [key for key in ("output", "datasets", "systems") if key not in values]
        if missing or unknown:
            raise BenchConfigError(f"{path}: " + "; ".join(
                ([f"missing {', '.join(missing)}"] if missing else []) + ([f"unknown {', '.join(unknown)}"] if unknown else [])))
        for key, value in values.items():
            accepts, expected = _FIELD_KINDS[key]
            if not accepts(value):
                raise BenchConfigError(f"{path}: {key}: expected {expected}, got {value!r}")
        values["systems"] = {name: options or {} for name, options in values["systems"].items()}  # null: no options
        config = cls(**values)
        _check_distinct(path, config)
        negatable = negatable_train_options()
        for where, options in (("train", config.train), *((f"system {name!r}", o) for name, o in config.systems.items())):
            for key, value in options.items():
                if not isinstance(key, str):
                    raise BenchConfigError(f"{path}: {where}: option {key!r} is not a name (an option of entangle train)")
                if value is False and key.replace("-", "_") not in negatable:
                    raise BenchConfigError(f"{path}: {where}: {key}: false would leave the option out; give its value")
            try:  # within one mapping (a system's option under another name than the budget's overrides it)
                check_one_name_each(options, f"{path}: {where}")
            except ConfigError as err:
                raise BenchConfigError(str(err)) from None
            # A --config file every run reads: its resume would send every run on from one directory
            # (its output, data and seed give way to those bench passes).
            if isinstance(given := options.get("config"), str) and isinstance(read := read_yaml(Path(given)), dict):
                if any(str(key).replace("-", "_") == "resume" for key in read):
                    raise BenchConfigError(f"{path}: {given} sets resume, which the benchmark sets per run")
        for option in ("output", "data", "seed", "resume"):
            if option in config.train or any(option in s for s in config.systems.values()):
                raise BenchConfigError(f"{path}: '{option}' is set by the benchmark, not by train or systems")
        for variant in config.noisy_tests:
            attack, _, rate = variant.partition("@")
            if attack not in ATTACK_NAMES or not _is_share(rate):
                raise BenchConfigError(f"{path}: noisy test {variant!r} is not ATTACK@RATE with an attack of "
                                       f"{', '.join(ATTACK_NAMES)} and a rate in [0, 1]")
        for pair in config.comparisons:
            listed = isinstance(pair, list) and all(isinstance(c, str) and c.rpartition(":")[0] in config.systems
                                                    and c.rpartition(":")[2] in SCORED_SIDES for c in pair)
            if not listed or len(pair) != 2 or pair[0] == pair[1]:
                raise BenchConfigError(f"{path}: compare needs two different 'system:side' entries of listed systems, "
                                       f"each side one of {', '.join(SCORED_SIDES)} (or a list of such pairs), got {pair}")
        for key in ("output", "results"):
            if (where := getattr(config, key)) is not None and Path(where).exists() and not Path(where).is_dir():
                raise BenchConfigError(f"{path}: {key}: {where} is a file, not a directory")
        return config

    @property
    def comparisons(self) -> list[list]:
        """``compare`` as a list of pairs (one pair may be written on its own)."""
        if not self.compare:
            return []
        return [self.compare] if all(isinstance(c, str) for c in self.compare) else list(self.compare)


def _check_distinct(path: Path, config: BenchConfig) -> None:
    """A seed, dataset or noisy test listed twice would count one run twice (a spread of 0); two names
    that give one run directory would share their runs."""
    # A noisy test by its attack and rate's value: charbert@0.5 and charbert@.5 are one test.
    noisy = [(attack, float(rate) if _is_share(rate) else rate)  # a malformed one is named below
             for attack, _, rate in (variant.partition("@") for variant in config.noisy_tests)]
    for key, items, names in (("seeds", config.seeds, config.seeds), ("datasets", config.datasets, config.datasets),
                              ("noisy_tests", noisy, config.noisy_tests)):
        if repeated := sorted({str(name) for item, name in zip(items, names) if items.count(item) > 1}):
            raise BenchConfigError(f"{path}: {key}: {', '.join(repeated)} listed more than once")
    if outside := [seed for seed in config.seeds if not 0 <= seed <= MAX_SEED]:
        raise BenchConfigError(f"{path}: seeds: {', '.join(map(str, outside))} outside 0 to 2**32 - 1")
    for key, names, folder in (("systems", list(config.systems), _slug),
                               ("datasets", config.datasets, lambda name: _slug(Path(name).name))):
        if unplaced := [name for name in names if not folder(name).strip(".")]:
            raise BenchConfigError(f"{path}: {key}: {unplaced[0]!r} gives the run directory {folder(unplaced[0])!r}, "
                                   "which is none of its own (the folder above, or the dataset's): rename it")
        by_folder: dict[str, list[str]] = {}
        for name in names:  # as a file system that ignores case (macOS, Windows) or the form of accents sees it
            by_folder.setdefault(unicodedata.normalize("NFC", folder(name)).casefold(), []).append(name)
        if shared := [group for group in by_folder.values() if len(group) > 1]:
            raise BenchConfigError(f"{path}: {key}: {' and '.join(map(repr, shared[0]))} would share the run directory "
                                   f"{folder(shared[0][0])!r}: rename one")


def _list_of(kind: type) -> Callable[[object], bool]:
    return lambda value: isinstance(value, list) and bool(value) and all(
        isinstance(item, kind) and not isinstance(item, bool) for item in value)


#: What each field of a grid file may hold, and how to say so when it does not.
_FIELD_KINDS: dict[str, tuple[Callable[[object], bool], str]] = {
    "output": (lambda value: isinstance(value, str), "a path"),
    "results": (lambda value: isinstance(value, str), "a path"),
    "datasets": (_list_of(str), "a list of dataset names"),
    "seeds": (_list_of(int), "a list of integer seeds"),
    "systems": (lambda value: isinstance(value, dict) and bool(value) and all(
        isinstance(name, str) and (isinstance(options, dict) or options is None) for name, options in value.items()),
        "a mapping of system names to their train options"),
    "train": (lambda value: isinstance(value, dict), "a mapping of train options"),
    "compare": (lambda value: isinstance(value, list), "a list of 'system:side' pairs"),
    # 40 or more: 2.5% of them left out on each side is then at least one, and the interval a 95% one.
    "bootstrap": (lambda value: isinstance(value, int) and not isinstance(value, bool) and value >= 40,
                  "a number of resamples, at least 40"),
    "macro_average": (lambda value: isinstance(value, bool), "true or false"),
    "noisy_tests": (lambda value: isinstance(value, list) and all(isinstance(item, str) for item in value),
                    "a list of ATTACK@RATE"),
}


def _is_share(text: str) -> bool:
    try:
        share(text)
    except (ValueError, ArgumentTypeError):
        return False
    return True


def _options(values: dict) -> list[str]:
    """``{"m": 1, "batch_size": 16, "group_by_length": false, "train_noise_attacks": [a, b]}`` -> ``entangle
    train`` arguments (``-m 1 --batch-size 16 --no-group-by-length --train-noise-attacks a b``): a key
    is a flag without its dashes."""
    negatable = negatable_train_options()
    args = []
    for key, value in values.items():
        flag = ("-" if len(key) == 1 else "--") + key.replace("_", "-")
        if value is True:
            args.append(flag)
        elif value is False and key.replace("-", "_") in negatable:
            args.append("--no-" + flag[2:])
        elif isinstance(value, list):  # an option of several values
            args += [flag, *map(str, value)]
        elif value is not False and value is not None:
            args += [flag, str(value)]
    return args


def _versions() -> dict:
    from importlib.metadata import version

    return {"python": platform.python_version(),
            **{name: version(name) for name in ("entangle-nlp", "torch", "transformers", "accelerate")}}


def _commit() -> str | None:
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          cwd=Path(__file__).resolve().parent)
    return done.stdout.strip() or None


def _slug(name: str) -> str:
    return "".join(c if c.isalnum() or c in "=.-" else "_" for c in name)


def plot_file(dataset: str) -> str:
    """The name of a dataset's plot in the report's directory."""
    return f"{_slug(Path(dataset).name)}.png"


def _run_path(root: str, dataset: str, system: str, seed: int) -> Path:
    return Path(root) / _slug(Path(dataset).name) / _slug(system) / f"seed-{seed}"


def run_dir(config: BenchConfig, dataset: str, system: str, seed: int) -> Path:
    """``OUTPUT/DATASET/SYSTEM/seed-N``, the run's model and checkpoint (a dataset given as a path
    is named by its last part)."""
    return _run_path(config.output, dataset, system, seed)


def result_dir(config: BenchConfig, dataset: str, system: str, seed: int) -> Path:
    """``RESULTS/DATASET/SYSTEM/seed-N``, the run's ``result.json`` and test predictions."""
    return _run_path(config.results or config.output, dataset, system, seed)


def read_predictions(config: BenchConfig, dataset: str, system: str, seed: int, variant: str | None = None) -> dict:
    with gzip.open(result_dir(config, dataset, system, seed) / predictions_file(variant), "rt", encoding="utf-8") as file:
        return json.load(file)


def train_arguments(config: BenchConfig, dataset: str, system: str, seed: int) -> list[str]:
    """The budget's options with the system's on top (a system may train longer than the budget, say)."""
    return ["--data", dataset, "--seed", str(seed), *_options({**config.train, **config.systems[system]})]


def data_options(resolved: dict) -> dict:
    """Of a run's :func:`resolved_options`, those on how its data is read (``data_dir``, columns,
    fields) that it sets: its test set is scored, and copied with noise, as its training read its
    training set (options a system's ``config:`` file sets included)."""
    defaults = train_defaults()
    return {key: resolved[key] for key in data_option_names() if key in resolved and resolved[key] != defaults.get(key)}


# Options that say where a run goes, not what it computes.
_PLACEMENT = {"command", "config", "output", "resume", "save_steps"}


def resolved_options(arguments: list[str]) -> dict:
    """Every ``entangle train`` option of these arguments, defaults filled in. A run is reused only
    if these match: the command line alone would hide a changed default."""
    printed = io.StringIO()
    try:
        with contextlib.redirect_stderr(printed):  # argparse's usage text, of which the last line says why
            parsed = parse_args(["train", *arguments])
        # Out of range (epochs: 0): found before the grid's first run, not when this run's turn comes.
        TrainingOptions(**values_of(TrainingOptions, parsed))
    except SystemExit:
        why = (printed.getvalue().strip().splitlines() or ["?"])[-1].partition("error: ")[2]
        raise BenchConfigError(f"`entangle train {' '.join(arguments)}` is not a valid command: {why}") from None
    except UsageError as err:
        raise BenchConfigError(f"`entangle train {' '.join(arguments)}` is not a valid command: {err}") from None
    return {key: value for key, value in vars(parsed).items() if key not in _PLACEMENT}


def _differences(ran: dict, wanted: dict) -> str:
    keys = sorted(key for key in set(ran) | set(wanted) if ran.get(key, "unset") != wanted.get(key, "unset"))
    return ", ".join(f"{key} {ran.get(key, 'unset')!r} (grid: {wanted.get(key, 'unset')!r})" for key in keys)


def train_command(config: BenchConfig, dataset: str, system: str, seed: int) -> str:
    """The run's ``entangle train`` command as ``result.json`` records it (and as it is checked)."""
    return "entangle train " + " ".join(train_arguments(config, dataset, system, seed))


def _history(log: Path, score: str) -> list[dict]:
    """Per epoch: training loss and each side's main dev score, to see how a system converged."""
    history = []
    for line in log.read_text().splitlines():
        entry = json.loads(line)
        dev = {side: {score: metrics[score]} for side, metrics in entry.get("dev", {}).items()}
        history.append({"epoch": entry["epoch"], "step": entry["step"], "train_loss": entry["train_loss"], "dev": dev,
                        **{key: entry[key] for key in ("collapsed", "cut") if key in entry}})
    return history


def finished_result(config: BenchConfig, dataset: str, system: str, seed: int) -> dict | None:
    """The run's ``result.json``, or ``None`` if it has not finished. Results are found by system
    name, so one that ran with other options (the system, the budget or a default changed since,
    or another grid sharing the results folder with another meaning for the name) is refused, not
    reused."""
    path = result_dir(config, dataset, system, seed) / RESULT
    if not path.is_file():
        return None
    result = read_record(path, "entangle")
    if "options" not in result:
        raise BenchConfigError(f"{path}: records no options (written by an older entangle); move it away to rerun it")
    wanted = resolved_options(train_arguments(config, dataset, system, seed))
    ran = _as_run(result["options"], wanted)
    if ran != wanted:
        raise BenchConfigError(f"{path}: ran `{result['command']}` with {_differences(ran, wanted)}; "
                               f"rename the system {system!r} or move the old result away")
    # The same run under another name that gives the same folder (`ent (m=1)` renamed `ent [m=1]`):
    # the tables, comparisons and plots know it by the grid's name.
    return {**result, "system": system}


def _as_run(recorded: dict, wanted: dict) -> dict:
    """A recorded run's options over today's: an option added to ``entangle train`` since the run
    was recorded took its default then, so adding an option leaves every committed result valid."""
    defaults, recorded = train_defaults(), upgraded(recorded)
    return {key: recorded[key] if key in recorded else defaults.get(key) for key in wanted}


def _check_resumable(directory: Path, wanted: dict) -> None:
    """Refuse to continue an interrupted run whose options the grid has changed since it started."""
    # An option added since the run started trains at its default when resumed: compared as that.
    ran = _as_run(read_record(directory / RUN_ARGS, "entangle train"), wanted)
    if ran != wanted:
        raise BenchConfigError(f"{directory}: started with {_differences(ran, wanted)}; "
                               "delete the directory to start the run again with the grid's options")


def run_one(config: BenchConfig, dataset: str, system: str, seed: int, threads: int | None = None) -> dict:
    """Train and test one (dataset, system, seed) unless its result exists; the result. ``threads``
    sets the runs' torch threads (``OMP_NUM_THREADS``) when several run at once."""
    from .training import METRICS_LOG  # training imports torch; bench needs only the name

    directory = run_dir(config, dataset, system, seed)
    results = result_dir(config, dataset, system, seed)
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)} if threads else None
    arguments = train_arguments(config, dataset, system, seed)
    options = resolved_options(arguments)
    reading = data_options(options)
    if (result := finished_result(config, dataset, system, seed)) is not None:
        # Noisy copies added to the grid since the run finished: its model, where it remains, is scored on them.
        missing = [v for v in config.noisy_tests if v not in result.get("noisy_test", {})]
        if missing and (directory / "model").is_dir():
            noisy, kept = _score_noisy(directory, dataset, missing, reading, env)
            result = {**result, "noisy_test": {**result.get("noisy_test", {}), **noisy}}
            _save_result(results, result, kept)
        return result
    entangle = [sys.executable, "-m", "entangle.cli"]
    started = time.perf_counter()
    if (directory / CHECKPOINT_DIR).is_dir():  # interrupted: continue exactly where it stopped
        _check_resumable(directory, options)
        subprocess.run([*entangle, "train", "--resume", str(directory)], check=True, env=env)
    else:  # nothing to continue from: whatever an earlier start left there is started again
        shutil.rmtree(directory, ignore_errors=True)
        subprocess.run([*entangle, "train", *arguments, "--output", str(directory)], check=True, env=env)
    predictions = directory / "test_predictions.json"
    test = evaluate_run(directory, dataset, directory / "test.json", predictions, env, reading)
    noisy, kept = _score_noisy(directory, dataset, config.noisy_tests, reading, env)
    kept[predictions_file()] = predictions
    summary = json.loads((directory / "train_summary.json").read_text())
    result = {
        "dataset": dataset, "system": system, "seed": seed, "task": test["task"],
        "command": train_command(config, dataset, system, seed), "options": options,
        **{key: value for key, value in (("test", test["results"]), ("test_argmax", test.get("argmax_results")))
           if value is not None},
        **({"noisy_test": noisy} if noisy else {}),
        "dev": summary["best_dev"], "best_epoch": summary["best_epoch"], "steps": summary["steps"],
        "train_time_s": summary["train_time_s"], "wall_time_s": round(time.perf_counter() - started, 1),
        **({"diverged": summary["diverged"]} if "diverged" in summary else {}),
        "peak_memory_mb": summary.get("peak_memory_mb"), "devices": summary["devices"],
        **{key: summary[key] for key in ("peak_gpu_memory_mb",) if key in summary},
        "history": _history(directory / METRICS_LOG, get_task(test["task"]).main_score),
        "versions": _versions(), "commit": _commit(),
    }
    _save_result(results, result, kept)
    # A finished run is never resumed, and its checkpoint (the weights and the optimizer's moments,
    # three times the model) is what fills a disk over a grid.
    shutil.rmtree(directory / CHECKPOINT_DIR, ignore_errors=True)
    return result


def _save_result(results: Path, result: dict, kept: dict[str, Path]) -> None:
    """The run's predictions (gzipped, by the names they are kept under), then its ``result.json``."""
    results.mkdir(parents=True, exist_ok=True)
    for name, source in kept.items():
        keep_predictions(source, results / name)
    (results / RESULT).write_text(json.dumps(result, indent=2))  # last: it marks the run finished


def _score_noisy(directory: Path, dataset: str, variants: list[str], reading: dict,
                 env: dict | None) -> tuple[dict, dict[str, Path]]:
    """The run's model on noisy copies of the test set (``ATTACK@RATE``, ``entangle perturb``, seed
    0): the scores per copy, and the predictions files to keep, by the name they are kept under."""
    noisy, kept = {}, {}
    for variant in variants:
        attack, _, rate = variant.partition("@")
        copy, scores, kept[predictions_file(variant)] = noisy_test_paths(directory, variant, dataset, reading.get("data_dir"))
        subprocess.run([sys.executable, "-m", "entangle.cli", "perturb", "--data", dataset, *_options(reading), "--split",
                        "test", "--attack", attack, "--rate", rate, "--output", str(copy)], check=True, env=env)
        noisy[variant] = evaluate_run(directory, copy, scores, kept[predictions_file(variant)], env, reading)["results"]
    return noisy, kept


# ---------------------------------------------------------------------------------- summaries
def _stats(values: list[float]) -> dict:
    return {"mean": statistics.mean(values), "std": statistics.stdev(values) if len(values) > 1 else 0.0,
            "n": len(values), "values": values}


def summarize(results: list[dict]) -> dict:
    """``{dataset: {system: {side: {"dev": stats, "test": stats, ...}}}}`` of the main score (× 100)."""
    summary: dict = {}
    for r in sorted(results, key=lambda r: r["seed"]):
        score = task_of(r).main_score
        for side, metrics in r["test"].items():
            entry = summary.setdefault(r["dataset"], {}).setdefault(r["system"], {}).setdefault(
                side, {"score": score, "seeds": [], "dev": [], "test": [], "train_time_s": [], "peak_memory_mb": []})
            entry["seeds"].append(r["seed"])
            entry["test"].append(100 * metrics[score])
            entry["dev"].append(100 * r["dev"][side][score] if r.get("dev") else float("nan"))
            entry["train_time_s"].append(r["train_time_s"])
            entry["peak_memory_mb"].append(r["peak_memory_mb"] or 0)
    for systems in summary.values():
        for sides in systems.values():
            for entry in sides.values():
                for key in ("dev", "test", "train_time_s", "peak_memory_mb"):
                    entry[key] = _stats(entry[key])
    return summary


def _mean_std(stats: dict) -> str:
    return f"{stats['mean']:.2f} ± {stats['std']:.2f}" if stats["n"] > 1 else f"{stats['mean']:.2f}"


def markdown_table(dataset: str, systems: dict) -> str:
    rows = [(system, side, entry) for system, sides in systems.items() for side, entry in sides.items()]
    score = rows[0][2]["score"]
    # Bold: the best of the rows with the most runs (one lucky seed is not the best system).
    most = max(entry["test"]["n"] for _, _, entry in rows)
    best = {key: max(entry[key]["mean"] for _, _, entry in rows if entry["test"]["n"] == most) for key in ("dev", "test")}
    lines = [f"| system | side | runs | dev {score} | test {score} | test per seed | training time | peak memory |",
             "|---|---|---|---|---|---|---|---|"]
    for system, side, entry in rows:
        cells = {key: _mean_std(entry[key]) for key in ("dev", "test")}
        cells = {key: f"**{text}**" if entry[key]["mean"] == best[key] and entry["test"]["n"] == most else text
                 for key, text in cells.items()}
        per_seed = ", ".join(f"{v:.2f} ({s})" for v, s in zip(entry["test"]["values"], entry["seeds"]))
        lines.append(f"| {system} | {side} | {entry['test']['n']} | {cells['dev']} | {cells['test']} | {per_seed} | "
                     f"{entry['train_time_s']['mean'] / 60:.1f} min | {entry['peak_memory_mb']['mean']:.0f} MB |")
    return (f"### {dataset}\n\n" + "\n".join(lines) + "\n\nMean ± sample standard deviation (n − 1) over the runs' "
            f"seeds; in bold the best of the rows with the most runs ({most}).")


def noisy_table(dataset: str, results: list[dict], variants: list[str]) -> str:
    """Each system and side's main test score on the clean test set and on each noisy copy (× 100)."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in results:
        if r["dataset"] != dataset or "noisy_test" not in r:
            continue
        score = task_of(r).main_score
        for side, metrics in r["test"].items():
            row = cells.setdefault((r["system"], side), {})
            for name, scores in (("clean", metrics), *((v, r["noisy_test"].get(v, {}).get(side, {})) for v in variants)):
                if score in scores:
                    row.setdefault(name, []).append(100 * scores[score])
    if not cells:
        return ""
    columns = ["clean", *variants]
    lines = ["| system | side | " + " | ".join(columns) + " |", "|---|---|" + "---|" * len(columns)]
    for (system, side), row in cells.items():
        runs = len(row.get("clean", []))  # a copy scored on fewer runs says so: its mean is over other seeds
        lines.append(f"| {system} | {side} | " + " | ".join(
            (_mean_std(_stats(row[c])) + (f" ({len(row[c])} of {runs} runs)" if len(row[c]) != runs else ""))
            if c in row else "–" for c in columns) + " |")
    return "Test sets with noise (`entangle perturb`, seed 0; ATTACK@RATE):\n\n" + "\n".join(lines)


def decoding_table(dataset: str, results: list[dict]) -> str:
    """What constrained decoding (the default for NER) changed: each system and side's main test
    score decoded both ways from the same model (runs that recorded both), and the difference."""
    cells: dict[tuple[str, str], dict[str, list[float]]] = {}
    for r in results:
        if r["dataset"] != dataset or not r.get("test_argmax"):
            continue
        score = task_of(r).main_score
        for side, metrics in r["test"].items():
            row = cells.setdefault((r["system"], side), {"constrained": [], "argmax": [], "difference": []})
            constrained, argmax = 100 * metrics[score], 100 * r["test_argmax"][side][score]
            for name, value in (("constrained", constrained), ("argmax", argmax), ("difference", constrained - argmax)):
                row[name].append(value)
    if not cells:
        return ""
    lines = ["| system | side | runs | constrained | argmax | constrained − argmax |", "|---|---|---|---|---|---|"]
    for (system, side), row in cells.items():
        difference = _stats(row["difference"])
        lines.append(f"| {system} | {side} | {difference['n']} | {_mean_std(_stats(row['constrained']))} | "
                     f"{_mean_std(_stats(row['argmax']))} | {difference['mean']:+.2f}"
                     + (f" ± {difference['std']:.2f}" if difference["n"] > 1 else "") + " |")
    return ("Decoding, test set (the same models' tags decoded as the most probable valid IOB2 sequence, the "
            "default, and word by word):\n\n" + "\n".join(lines))


def devices_line(results: list[dict]) -> str:
    """Where the runs trained, since the training-time column means little across machines."""
    counts: dict[str, int] = {}
    for r in results:
        name = " + ".join(r.get("devices") or ["not recorded"])
        counts[name] = counts.get(name, 0) + 1
    return "Trained on: " + "; ".join(f"{name} ({n} run{'s' * (n > 1)})" for name, n in sorted(counts.items())) + "."


def macro_average(summary: dict, datasets: list[str]) -> dict:
    """Per system and side, the main score averaged over the datasets (e.g. MasakhaNER's ten
    languages): for each seed run on every dataset the mean over datasets, then mean ± std over
    those seeds. A system or side without results on every dataset is marked incomplete, not
    averaged over fewer datasets (that would compare different averages)."""
    keys = dict.fromkeys((system, side) for d in datasets for system, sides in summary.get(d, {}).items() for side in sides)
    macro: dict = {}
    for system, side in keys:
        present = [e for d in datasets if (e := summary.get(d, {}).get(system, {}).get(side)) is not None]
        scores = sorted({e["score"] for e in present})  # NER's F1 and POS's accuracy make no one mean
        complete = len(present) == len(datasets) and len(scores) == 1
        seeds = sorted(set.intersection(*(set(e["seeds"]) for e in present))) if complete else []
        row = {"score": present[0]["score"], "datasets": len(present), "of": len(datasets), "seeds": seeds,
               **({"scores": scores} if len(scores) > 1 else {})}
        for key in ("dev", "test") if seeds else ():
            row[key] = _stats([statistics.mean(e[key]["values"][e["seeds"].index(s)] for e in present) for s in seeds])
        macro.setdefault(system, {})[side] = row
    return macro


def macro_table(macro: dict) -> str:
    rows = [(system, side, row) for system, sides in macro.items() for side, row in sides.items()]
    complete = [row for _, _, row in rows if row["seeds"]]
    best = {key: max(row[key]["mean"] for row in complete) for key in ("dev", "test")} if complete else {}
    score, count = rows[0][2]["score"], rows[0][2]["of"]
    lines = [f"| system | side | seeds | dev {score} | test {score} | test per seed |", "|---|---|---|---|---|---|"]
    for system, side, row in rows:
        if "scores" in row:
            lines.append(f"| {system} | {side} | - | not averaged: its datasets score {' and '.join(row['scores'])} | | |")
            continue
        if not row["seeds"]:
            lines.append(f"| {system} | {side} | - | incomplete: {row['datasets']} of {row['of']} datasets | | |")
            continue
        cells = {key: _mean_std(row[key]) for key in ("dev", "test")}
        cells = {key: f"**{text}**" if row[key]["mean"] == best[key] else text for key, text in cells.items()}
        per_seed = ", ".join(f"{v:.2f} ({s})" for v, s in zip(row["test"]["values"], row["seeds"]))
        lines.append(f"| {system} | {side} | {len(row['seeds'])} | {cells['dev']} | {cells['test']} | {per_seed} |")
    return f"### Macro average over {count} dataset{'s' * (count != 1)}\n\n" + "\n".join(lines)


def task_of(result: dict) -> Task:
    """The task a run trained for: recorded in its result, else (results written before it was)
    resolved from its options and dataset as ``entangle train`` resolves it."""
    if "task" in result:
        return get_task(result["task"])
    if result["options"].get("task"):
        return get_task(result["options"]["task"])
    dataset = result["dataset"]
    return get_task(DATASETS[dataset].task if dataset in DATASETS else default_task(split_files(dataset)[0]))


def paired_bootstrap(task: Task, pairs: list[tuple[list, list]], samples: int, seed: int = 0) -> dict:
    """Mean over seeds of score(A) - score(B) (× 100) on the test set and on ``samples`` resamples
    of its sentences (the same resample for A and B and for every seed): a 95% interval and the
    share of resamples where A is not better. ``pairs``: per seed, A's and B's
    :meth:`Task.example_counts <entangle.tasks.Task.example_counts>`."""
    rng = random.Random(seed)
    n = len(pairs[0][0])

    def difference(indices) -> float:
        return 100 * statistics.mean(task.score_of_counts([a[i] for i in indices]) -
                                     task.score_of_counts([b[i] for i in indices]) for a, b in pairs)

    observed = difference(range(n))
    resampled = sorted(difference([rng.randrange(n) for _ in range(n)]) for _ in range(samples))
    cut = int(0.025 * samples)  # as many resamples left out below the interval as above it
    return {"difference": observed, "ci95": [resampled[cut], resampled[samples - 1 - cut]],
            "p_not_better": sum(d <= 0 for d in resampled) / samples, "samples": samples, "sentences": n}


def compare(config: BenchConfig, results: list[dict]) -> dict:
    """Each listed comparison per dataset, on the clean test set (the seeds both systems ran) and
    on each noisy copy (the seeds whose runs kept their predictions on it): per-seed differences
    and the paired bootstrap."""
    out: dict[str, list] = {}
    counts: dict[tuple, list] = {}  # (dataset, system, seed, side, test): read once for every comparison it is in
    for a, b in config.comparisons:
        for variant in (None, *config.noisy_tests):
            for dataset, comparison in _compare_pair(config, results, a, b, counts, variant).items():
                out.setdefault(dataset, []).append(comparison)
    return out


def _compare_pair(config: BenchConfig, results: list[dict], first: str, second: str, counts: dict,
                  variant: str | None) -> dict:
    (a_system, _, a_side), (b_system, _, b_side) = first.rpartition(":"), second.rpartition(":")

    def scored(run: dict) -> dict | None:  # the run's scores on this test set, if it kept its predictions there
        if variant is None:
            return run["test"]
        kept = (result_dir(config, run["dataset"], run["system"], run["seed"]) / predictions_file(variant)).is_file()
        return run.get("noisy_test", {}).get(variant) if kept else None

    out = {}
    for dataset in config.datasets:
        by_seed, finished = {}, {}
        for r in results:
            if r["dataset"] == dataset and r["system"] in (a_system, b_system):
                finished.setdefault(r["seed"], set()).add(r["system"])
                if scored(r) is not None:
                    by_seed.setdefault(r["seed"], {})[r["system"]] = r
        seeds = sorted(s for s, runs in by_seed.items() if {a_system, b_system} <= set(runs))
        left_out = sorted(s for s, systems in finished.items() if {a_system, b_system} <= systems and s not in seeds)
        if not seeds:
            if left_out:  # both ran, but neither seed kept its predictions on this copy: say so in the report
                out[dataset] = {"a": first, "b": second, "test": variant, "per_seed": {}, "left_out": left_out}
            continue
        task = task_of(by_seed[seeds[0]][a_system])
        score = task.main_score
        # Like for like: a run decoded word by word alone (tagged before constrained decoding
        # existed: it kept no argmax scores beside its own) is compared with the other run's
        # word-by-word tags, which every constrained run keeps beside its own.
        argmax = task.has_label_grammar and any(not by_seed[seed][system].get("test_argmax")
                                                for seed in seeds for system in (a_system, b_system))
        per_seed, pairs, test_gold = {}, [], None
        for seed in seeds:
            a, b = by_seed[seed][a_system], by_seed[seed][b_system]
            for run, side in ((a, a_side), (b, b_side)):
                if (key := (dataset, run["system"], seed, side, variant, argmax)) not in counts:
                    predictions = read_predictions(config, dataset, run["system"], seed, variant)
                    tags = predictions["predicted_argmax" if argmax and run.get("test_argmax") else "predicted"]
                    # With the words' hash (runs since session 51): the same labels on other words (another noisy copy) differ too.
                    counts[key] = ((predictions["gold"], predictions.get("words_sha256")),
                                   task.example_counts(predictions["gold"], tags[side]))
            (a_gold, a_counts), (b_gold, b_counts) = (counts[dataset, a_system, seed, a_side, variant, argmax],
                                                      counts[dataset, b_system, seed, b_side, variant, argmax])
            if not _same_test(a_gold, b_gold):  # paired by position, other test sets would be compared silently
                raise BenchRunError(f"{dataset}, seed {seed}: {a_system!r} and {b_system!r} were scored on different "
                                    f"test sets ({len(a_gold[0])} and {len(b_gold[0])} examples, or other labels or "
                                    "words); delete the older run's result to score it again")
            if test_gold is not None and not _same_test(a_gold, test_gold):  # every seed's resample draws the same sentences
                raise BenchRunError(f"{dataset}: seeds {seeds[0]} and {seed} of {a_system!r} were scored on different "
                                    f"test sets ({len(test_gold[0])} and {len(a_gold[0])} examples, or other labels or "
                                    "words); delete the older run's result to score it again")
            test_gold = a_gold
            pair = (a_counts, b_counts)
            per_seed[seed] = (100 * (task.score_of_counts(pair[0]) - task.score_of_counts(pair[1])) if argmax
                              else 100 * (scored(a)[a_side][score] - scored(b)[b_side][score]))
            pairs.append(pair)
        out[dataset] = {"a": first, "b": second, "test": variant or "clean", "per_seed": per_seed,
                        "bootstrap": paired_bootstrap(task, pairs, config.bootstrap), "left_out": left_out,
                        **({"decoding": "argmax"} if argmax else {})}
    return out


def _same_test(a: tuple[list, str | None], b: tuple[list, str | None]) -> bool:
    """Two runs' test sets, ``(gold labels, words' hash)``, are one: the same labels, and the same
    words where both runs recorded their hash."""
    return a[0] == b[0] and (a[1] is None or b[1] is None or a[1] == b[1])


def plotted_as(config: BenchConfig, system: str) -> tuple[int, str]:
    """A system's m (from its options over the budget's: a grid may set m for every system) and
    its options other than m and the side, which tell its line from the other systems'."""
    options, merged = config.systems[system], {**config.train, **config.systems[system]}
    fields_of = {key: train_option_names().get(key.replace("-", "_")) for key in merged}
    m = ModelOptions(**{fields_of[key]: value for key, value in merged.items()
                        if fields_of[key] in MODEL_FIELDS}).resolved().coattention_layers
    variant = ", ".join(key if value is True else f"{key} {value}" for key, value in options.items()
                        if fields_of[key] not in ("coattention_layers", "side"))
    return m, variant


def plot(dataset: str, systems: dict, config: BenchConfig, png: Path) -> None:
    """Score against m for the systems that differ only in m (each side a line, with the standard
    deviation as error bars); every other system as a horizontal line."""
    plt = pyplot()  # first: without matplotlib, MissingExtraError rather than an ImportError below
    from matplotlib.ticker import MaxNLocator

    figure, axis = plt.subplots(figsize=(6, 4))
    grouped: dict[str, list] = {}
    flat = []
    for system, sides in systems.items():
        m, variant = plotted_as(config, system)
        for side, entry in sides.items():
            if m > 0:
                grouped.setdefault(f"{side} side" + (f" ({variant})" if variant else ""), []).append((m, entry["test"]))
            else:
                flat.append((f"{system} ({side})", entry["test"]))
    for label, points in grouped.items():
        points.sort(key=lambda p: p[0])
        axis.errorbar([m for m, _ in points], [s["mean"] for _, s in points], yerr=[s["std"] for _, s in points],
                      marker="o", capsize=3, label=f"entanglement, {label}")
    for k, (label, stats) in enumerate(flat):
        axis.axhline(stats["mean"], linestyle="--", color=f"C{len(grouped) + k}", label=label)
    score = next(iter(next(iter(systems.values())).values()))["score"]
    axis.set(title=f"{dataset}: test {score} (mean over seeds)", xlabel="co-attention modules per side (m)",
             ylabel=f"{score} × 100")
    axis.xaxis.set_major_locator(MaxNLocator(integer=True))  # m is a count, even with one value plotted
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)


def comparison_line(c: dict) -> str:
    """One comparison in words; on a noisy copy, the seeds left out for want of kept predictions."""
    noisy_copy = "" if c["test"] == "clean" else f" on the {c['test']} copy of test"
    left_out = (f" (seed{'s' if len(c['left_out']) > 1 else ''} {', '.join(map(str, c['left_out']))}: "
                "no predictions kept on this copy)") if c.get("left_out") else ""
    b = c["bootstrap"]
    decoded = " (both decoded word by word: a run tagged before constrained decoding)" if c.get("decoding") == "argmax" else ""
    return (f"{c['a']} minus {c['b']}{noisy_copy}{decoded}, per seed: "
            + ", ".join(f"{d:+.2f} ({s})" for s, d in c["per_seed"].items())
            + f"{left_out}; mean {b['difference']:+.2f}, 95% paired-bootstrap interval [{b['ci95'][0]:+.2f}, {b['ci95'][1]:+.2f}] "
            f"over {b['sentences']} test sentences ({b['samples']} resamples), share of resamples without a gain "
            f"{b['p_not_better']:.3f}.")


def report(config: BenchConfig, results: list[dict]) -> str:
    """Write ``summary.json``, ``RESULTS.md`` and one PNG per dataset into the output directory; the Markdown."""
    output = Path(config.output)
    summary = summarize(results)
    comparison = compare(config, results)
    parts = []
    for dataset, systems in summary.items():
        png = output / plot_file(dataset)
        plot(dataset, systems, config, png)
        parts.append(markdown_table(dataset, systems) + "\n\n" + devices_line([r for r in results if r["dataset"] == dataset])
                     + f"\n\n![{dataset}]({png.name})")
        if config.noisy_tests and (table := noisy_table(dataset, results, config.noisy_tests)):
            parts.append(table)
        if table := decoding_table(dataset, results):
            parts.append(table)
        comparisons = comparison.get(dataset, [])
        parts.extend(comparison_line(c) for c in comparisons if c["per_seed"])
        if without := sum(not c["per_seed"] for c in comparisons):
            parts.append(f"No interval for {without} comparison{'s' if without > 1 else ''} on noisy copies: no seed's "
                         "runs kept their predictions there (benchmarks/keep_noisy_predictions.py adds them to runs "
                         "whose models remain).")
    macro = macro_average(summary, config.datasets) if config.macro_average else {}
    if macro:
        parts.append(macro_table(macro))
    commands = sorted({r["command"] for r in results})
    text = ("\n\n".join(parts) + "\n\nEvery run: `" + "`, `".join(commands) + "` (seed and data per run).\n")
    (output / "summary.json").write_text(json.dumps(
        {"summary": summary, "comparison": comparison, **({"macro_average": macro} if macro else {})}, indent=2))
    (output / "RESULTS.md").write_text(text)
    return text


def run_bench(config: BenchConfig, report_only: bool = False, datasets: list[str] | None = None,
              systems: list[str] | None = None, seeds: list[int] | None = None, workers: int = 1) -> str:
    """Run every missing (dataset, system, seed), then write the tables, plots and summary;
    ``report_only`` writes them from the runs that have finished. ``datasets``, ``systems`` and ``seeds``
    limit the training to part of the grid (a part of a long grid now, the rest later); the report
    still covers every finished run. ``workers`` runs train at once, the CPU cores shared among them."""
    pyplot()  # the report draws a figure per dataset: without matplotlib, stop before the grid trains
    chosen = (datasets, systems, seeds)
    if report_only and (workers > 1 or any(subset is not None for subset in chosen)):
        raise BenchConfigError("--report-only trains nothing and reports every finished run: --datasets, --systems, "
                               "--seeds and --workers would change nothing")
    Path(config.output).mkdir(parents=True, exist_ok=True)
    for kind, subset, known in zip(("datasets", "systems", "seeds"), chosen, (config.datasets, config.systems, config.seeds)):
        unknown = sorted(map(str, set(subset or []) - set(known)))
        if unknown:
            raise BenchConfigError(f"{', '.join(unknown)}: not among the grid's {kind} ({', '.join(map(str, known))})")
    grid = [(dataset, system, seed) for seed in config.seeds for dataset in config.datasets for system in config.systems]
    todo = [] if report_only else [key for key in grid if all(s is None or k in s for k, s in zip(key, chosen))]

    # A mistyped option, or a run recorded or begun with other options, stops the grid before anything trains.
    unfinished = {key: resolved_options(train_arguments(config, *key)) for key in todo
                  if finished_result(config, *key) is None}  # a finished run's options are checked in it
    for key, wanted in unfinished.items():
        if (run_dir(config, *key) / CHECKPOINT_DIR).is_dir():
            _check_resumable(run_dir(config, *key), wanted)
    for entry in {entry for pair in config.comparisons for entry in pair}:  # else the report fails after the grid
        system, _, side = entry.rpartition(":")
        for dataset in config.datasets:
            options = resolved_options(train_arguments(config, dataset, system, config.seeds[0]))
            trained = trained_sides(options["side"], options["joint_head"])
            if side not in trained:
                raise BenchConfigError(f"compare {entry!r}: {system!r} trains no {side} head (it trains "
                                       f"{', '.join(sorted(trained))})")
    for key, wanted in unfinished.items():  # a misspelt dataset, or one not there: refused now, not at its turn
        try:
            if str(wanted["data"]) not in DATASETS:  # a named one may still be downloaded
                split_files(wanted["data"], wanted["data_dir"])
            for given in (wanted["train"], wanted["dev"]):
                if given is not None and not Path(given).is_file():
                    raise FileNotFoundError(f"{given}: no such file")
            task = data_task(wanted["data"], data_dir=wanted["data_dir"], task=wanted["task"], train=wanted["train"],
                             dev=wanted["dev"])
        except OSError as err:
            raise BenchConfigError(f"dataset {key[0]!r}: {err}") from None
        if config.noisy_tests and get_task(task).unit != "word":  # else each run fails after its training
            raise BenchConfigError(f"noisy_tests: entangle perturb writes noisy copies of data labelled per word; "
                                   f"{key[0]!r} is {task} data")
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1  # Linux only
    threads = max(1, cores // workers) if workers > 1 else None
    with ThreadPoolExecutor(max(1, workers)) as pool:  # threads: each waits on its run's processes
        futures = {pool.submit(run_one, config, *key, threads): key for key in todo}
        for future in as_completed(futures):
            try:
                future.result()
            except subprocess.CalledProcessError as err:
                pool.shutdown(cancel_futures=True)  # runs under way finish; nothing new starts
                raise BenchRunError(f"{run_dir(config, *futures[future])}: {' '.join(err.cmd[2:4])} failed (exit "
                                    f"{err.returncode}); fix it and rerun: finished runs are kept, this one continues "
                                    "from its checkpoint") from None
    results = [result for key in grid if (result := finished_result(config, *key)) is not None]
    if not results:
        raise BenchRunError(f"{config.output}: no finished run to report")
    return report(config, results)
