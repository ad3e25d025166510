"""Issue #8 on CoNLL-03: the table of ``benchmarks/conll03_pretrained_char.sh``'s runs.

The entanglement model (m=2, both sides, 1 epoch, seed 42) with the from-scratch character
encoder (``runs/bench-conll03/entangle-m2``, from ``conll03_noise.sh``) and with each pretrained
one; test and dev entity F1 of both sides, the training time, and each encoder's pretraining
time (``runs/pretrain-char/NAME/pretraining.json``). Runs not finished yet are listed as such.

    python benchmarks/conll03_pretrained_report.py      # writes the RESULTS.md section
"""

from __future__ import annotations

import json
from pathlib import Path

from results_md import replace_section

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "runs" / "bench-conll03"
PRETRAIN = ROOT / "runs" / "pretrain-char"
#: row label -> (run directory, pretrained encoder name or None)
SYSTEMS = {"from scratch": ("entangle-m2", None), "pretrained, MLM": ("entangle-m2-char-mlm", "mlm"),
           "pretrained, distillation": ("entangle-m2-char-distill", "distill"),
           "pretrained, MLM + distillation": ("entangle-m2-char-mlm+distill", "mlm+distill")}


def _f1(metrics: dict, side: str) -> str:
    return f"{100 * metrics[side]['f1']:.2f}" if side in metrics else "–"


def _pretraining(name: str | None) -> str:
    if name is None:
        return "–"
    summary = json.loads((PRETRAIN / name / "pretraining.json").read_text())
    return f"{summary['steps']} steps, {summary['pretrain_time_s'] / 60:.1f} min"


def row(label: str, directory: str, name: str | None) -> str:
    run = RUNS / directory
    if not (run / "test_metrics.json").is_file():
        return f"| {label} | not finished | | | | | {_pretraining(name)} |"
    test = json.loads((run / "test_metrics.json").read_text())["results"]
    summary = json.loads((run / "train_summary.json").read_text())
    dev = summary["best_dev"]
    return (f"| {label} | {_f1(test, 'subword')} | {_f1(test, 'char')} | {_f1(dev, 'subword')} | {_f1(dev, 'char')} | "
            f"{summary['train_time_s'] / 60:.0f} min | {_pretraining(name)} |")


def main() -> None:
    lines = ["| character encoder (m=2) | subword side test F1 | character side test F1 | subword side dev F1 | "
             "character side dev F1 | fine-tuning time | pretraining |", "|---|---|---|---|---|---|---|",
             *(row(label, *system) for label, system in SYSTEMS.items())]
    body = ("Produced by `bash benchmarks/conll03_pretrained_char.sh` (after `bash benchmarks/conll03_noise.sh` for "
            "the from-scratch run), then `python benchmarks/conll03_pretrained_report.py`.\n\n" + "\n".join(lines))
    replace_section("conll03-pretrained-char", body)
    print(body)


if __name__ == "__main__":
    main()
