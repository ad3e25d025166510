"""WNUT-17 test entity F1: subword encoder alone vs the entanglement model's two sides.

Every system is trained with the same epochs, batch size and learning rates through the same
``entangle train`` code path, for each seed; finished runs are skipped, so rerunning resumes the
grid. Results go to ``benchmarks/results/wnut17_sides.json`` and the table in
``benchmarks/RESULTS.md``.

    python benchmarks/wnut17_sides.py --epochs 3 --seeds 42 [43 44] [--only "subword-alone (m=0)"]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

from results_md import replace_section

ROOT = Path(__file__).resolve().parent.parent
RESULTS_JSON = ROOT / "benchmarks" / "results" / "wnut17_sides.json"
SECTION = "wnut17-sides"

#: Character encoders pretrained by ``entangle pretrain-char`` (issue #8): name -> objectives. Each
#: is pretrained once, on the training splits' text of WNUT-17 and CoNLL-03, for the same time.
PRETRAINED_CHAR = {"mlm+distill": ["mlm", "distill"], "mlm": ["mlm"], "distill": ["distill"]}
PRETRAIN_OPTIONS = ["--data", "wnut17", "conll2003", "--max-minutes", "10", "--max-steps", "3000", "--seed", "42"]
PRETRAIN_DIR = "runs/pretrain-char"

#: name -> (extra train options, sides to report)
SYSTEMS = {
    "subword-alone (m=0)": (["-m", "0", "--side", "subword"], ["subword"]),
    "entangle m=1": (["-m", "1", "--side", "both"], ["subword", "char"]),
    "entangle m=2": (["-m", "2", "--side", "both"], ["subword", "char"]),
    "char-alone (m=0)": (["-m", "0", "--side", "char"], ["char"]),
    # The speed lever of issue #7: a co-attention a third of MiniLM's width (benchmarks/speed.py --part width).
    "entangle m=2, width 128": (["-m", "2", "--side", "both", "--coattention-width", "128", "--coattention-heads", "4"],
                                ["subword", "char"]),
    # Same fine-tuning as "entangle m=1" (the character encoder at --new-lr's rate): only its start differs.
    **{f"entangle m=1, char pretrained ({name})": (["-m", "1", "--side", "both", "--char", f"{PRETRAIN_DIR}/{name}",
                                                    "--char-lr", "5e-4"], ["subword", "char"]) for name in PRETRAINED_CHAR},
    # The default for a pretrained encoder: it fine-tunes at --lr (5e-5) like MiniLM.
    "entangle m=1, char pretrained (mlm+distill), char lr 5e-5": (
        ["-m", "1", "--side", "both", "--char", f"{PRETRAIN_DIR}/mlm+distill"], ["subword", "char"]),
}


def slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def run(command: list[str]) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def pretrain_char(entangle: list[str], name: str) -> dict:
    """Pretrain (or finish pretraining) the character encoder ``name``; its summary. The summary,
    loss log and plot are kept in ``benchmarks/results/pretrain-char/``."""
    output = Path(PRETRAIN_DIR) / name
    if not (output / "pretraining.json").exists():
        if (output / "checkpoint").is_dir():
            run([*entangle, "pretrain-char", "--resume", str(output)])
        else:
            run([*entangle, "pretrain-char", *PRETRAIN_OPTIONS, "--objectives", *PRETRAINED_CHAR[name],
                 "--output", str(output)])
    kept = ROOT / "benchmarks" / "results" / "pretrain-char" / slug(name)
    kept.mkdir(parents=True, exist_ok=True)
    for file in ("pretraining.json", "pretrain_log.jsonl", "pretrain_losses.png"):
        shutil.copy(output / file, kept / file)
    return json.loads((output / "pretraining.json").read_text())


def commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "entangle"], capture_output=True, text=True, cwd=ROOT).stdout
    return head + ("+uncommitted" if dirty.strip() else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--seeds", type=int, nargs="+", default=[42])
    parser.add_argument("--runs-dir", default="runs/bench-wnut17")
    parser.add_argument("--only", nargs="*", help="run only these systems")
    args = parser.parse_args()
    entangle = [sys.executable, "-m", "entangle.cli"]
    results = json.loads(RESULTS_JSON.read_text()) if RESULTS_JSON.exists() else {}
    for seed in args.seeds:
        for name, (options, sides) in SYSTEMS.items():
            if args.only and name not in args.only:
                continue
            common = ["--data", "wnut17", "--epochs", str(args.epochs), "--seed", str(seed), "--patience", "0"]
            output = Path(args.runs_dir) / f"{slug(name)}-seed{seed}"
            test_file = output / "test_metrics.json"
            pretrained = next((key for key in PRETRAINED_CHAR if f"char pretrained ({key})" in name), None)
            if not test_file.exists():
                if pretrained:
                    pretrain_char(entangle, pretrained)
                output.mkdir(parents=True, exist_ok=True)
                (output / "commit.txt").write_text(commit())
                run([*entangle, "train", *common, *options, "--output", str(output)])
                run([*entangle, "evaluate", str(output), "--data", "wnut17", "--output", str(test_file)])
            summary = json.loads((output / "train_summary.json").read_text())
            test = json.loads(test_file.read_text())["results"]
            results.setdefault(name, {})[str(seed)] = {
                "command": " ".join(["entangle", "train", *common, *options]),
                "commit": (output / "commit.txt").read_text().strip() if (output / "commit.txt").exists() else None,
                "train_time_s": summary["train_time_s"],
                "best_epoch": summary["best_epoch"],
                "sides": {side: {"dev_f1": summary["best_dev"][side]["f1"], "test_f1": test[side]["f1"],
                                 "test_precision": test[side]["precision"], "test_recall": test[side]["recall"]}
                          for side in sides},
            }
            if pretrained:
                results[name][str(seed)]["pretraining"] = pretrain_char(entangle, pretrained)
            RESULTS_JSON.parent.mkdir(parents=True, exist_ok=True)
            RESULTS_JSON.write_text(json.dumps(results, indent=2))
    write_table(results, args.epochs)


def _mean_std(values: list[float]) -> str:
    if len(values) == 1:
        return f"{100 * values[0]:.2f}"
    return f"{100 * statistics.mean(values):.2f} ± {100 * statistics.stdev(values):.2f}"


def write_table(results: dict, epochs: int) -> None:
    rows = ["| system | side | seeds | dev F1 | test F1 | test P | test R | test F1 per seed | best epoch | training time |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for name, by_seed in results.items():
        seeds = sorted(by_seed, key=int)
        for side in next(iter(by_seed.values()))["sides"]:
            values = {k: [by_seed[s]["sides"][side][k] for s in seeds] for k in ("dev_f1", "test_f1", "test_precision", "test_recall")}
            rows.append(
                f"| {name} | {side} | {len(seeds)} | {_mean_std(values['dev_f1'])} | **{_mean_std(values['test_f1'])}** | "
                f"{_mean_std(values['test_precision'])} | {_mean_std(values['test_recall'])} | "
                + ", ".join(f"{100 * v:.2f} ({s})" for v, s in zip(values["test_f1"], seeds))
                + f" | {', '.join(str(by_seed[s]['best_epoch']) for s in seeds)} | "
                f"{statistics.mean(by_seed[s]['train_time_s'] for s in seeds) / 60:.1f} min |"
            )
    pretrained = {name: r["pretraining"] for name, by_seed in results.items() for r in by_seed.values() if "pretraining" in r}
    if pretrained:
        rows += ["", "Character encoders pretrained for these runs (`entangle pretrain-char`; losses are means over "
                 "the first and the last 25 steps):", "",
                 "| system | steps | epochs | pretraining time | MLM loss | MLM accuracy | distill loss (clean) | "
                 "distill loss (misspelled) |", "|---|---|---|---|---|---|---|---|"]
        for name, p in pretrained.items():
            first, last = p["first_log"], p["last_log"]
            cells = [f"{first[k]:.3f} → {last[k]:.3f}" if k in last else "–"
                     for k in ("mlm_loss", "mlm_accuracy", "distill_loss", "distill_noisy_loss")]
            rows.append(f"| {name} | {p['steps']} | {p['epochs']} | {p['pretrain_time_s'] / 60:.1f} min | " + " | ".join(cells) + " |")
        pretrain_commands = sorted({f"    {p['config']['command']}" for p in pretrained.values()})
    commands = "\n".join(sorted({f"    {r['command']}" for by_seed in results.values() for r in by_seed.values()})
                         + (pretrain_commands if pretrained else []))
    replace_section(SECTION, "\n".join(rows) + "\n\nProduced by `python benchmarks/wnut17_sides.py "
                    f"--epochs {epochs} --seeds ...`, which runs, per system and seed:\n\n{commands}")


if __name__ == "__main__":
    main()
