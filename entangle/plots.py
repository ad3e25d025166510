"""Training curves (train loss and each side's dev score per epoch) and pretraining losses, as PNGs
beside their logs."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only; no display is needed (or available on servers)
import matplotlib.pyplot as plt  # noqa: E402


def plot_training_curves(metrics_log: Path, png: Path, main_score: str) -> None:
    records = [json.loads(line) for line in metrics_log.read_text().splitlines() if line.strip()]
    epochs = [r["epoch"] for r in records]
    figure, (loss_axis, score_axis) = plt.subplots(1, 2, figsize=(10, 4))
    loss_axis.plot(epochs, [r["train_loss"] for r in records], marker="o")
    loss_axis.set(title="training loss", xlabel="epoch", ylabel="cross-entropy")
    sides = sorted({side for r in records for side in r.get("dev", {})})
    for side in sides:
        score_axis.plot(epochs, [r["dev"][side][main_score] for r in records], marker="o", label=f"{side} side")
    score_axis.set(title=f"dev {main_score}", xlabel="epoch", ylabel=main_score)
    if sides:
        score_axis.legend()
    for axis in (loss_axis, score_axis):
        axis.grid(alpha=0.3)
        axis.set_xticks(epochs)
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)


def plot_pretraining_losses(records: list[dict], png: Path) -> None:
    """One panel per objective's loss against the step (the noisy copy's beside the clean one)."""
    steps = [r["step"] for r in records]
    panels = [("mlm", ["mlm_loss"], "cross-entropy"), ("distillation", ["distill_loss", "distill_noisy_loss"], "loss")]
    panels = [(title, [k for k in keys if k in records[0]], unit) for title, keys, unit in panels]
    panels = [p for p in panels if p[1]]
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (title, keys, unit) in zip(axes[0], panels):
        for key in keys:
            axis.plot(steps, [r[key] for r in records], label="noisy copy" if "noisy" in key else "clean text")
        axis.set(title=title, xlabel="step", ylabel=unit)
        axis.grid(alpha=0.3)
        if len(keys) > 1:
            axis.legend()
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)
