"""Training curves (train loss and each side's dev score per epoch) and pretraining losses, as PNGs
beside their logs.

matplotlib is the optional ``plots`` extra: without it training and pretraining write no figure (one
line says so), and the commands whose output includes a figure (bench, robustness) stop at once.
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
from pathlib import Path

from .options import MissingExtraError

PLOTS_EXTRA = "pip install 'entangle-nlp[plots]'"


def pyplot():
    """``matplotlib.pyplot``, drawing into files only (no display is needed, or available on servers);
    ``MissingExtraError`` without the plots extra."""
    try:
        import matplotlib
    except ImportError as error:
        raise MissingExtraError(f"{error}: figures need the plots extra ({PLOTS_EXTRA})") from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _can_draw(png: Path) -> bool:
    """Whether a figure that only illustrates a log can be drawn; without matplotlib, says once that
    it is left out, and the run goes on."""
    if importlib.util.find_spec("matplotlib") is not None:
        return True
    _left_out(png.name)
    return False


@functools.cache
def _left_out(name: str) -> None:
    print(f"{name} is not drawn: matplotlib is not installed ({PLOTS_EXTRA})", file=sys.stderr)


def plot_training_curves(metrics_log: Path, png: Path, main_score: str) -> None:
    if not _can_draw(png):
        return
    plt = pyplot()
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


#: How each pretraining loss is named in a panel's legend.
LOSS_LABELS = {"mlm_loss": "clean text", "distill_loss": "clean text", "distill_noisy_loss": "noisy copy",
               "char_mlm_loss": "character side", "subword_mlm_loss": "subword side"}


def plot_pretraining_losses(records: list[dict], png: Path) -> None:
    """One panel per objective's loss against the step (the noisy copy's beside the clean one)."""
    if not _can_draw(png):
        return
    plt = pyplot()
    steps = [r["step"] for r in records]
    panels = [("mlm", ["mlm_loss"], "cross-entropy"), ("distillation", ["distill_loss", "distill_noisy_loss"], "loss"),
              ("masked words", ["char_mlm_loss", "subword_mlm_loss"], "cross-entropy")]
    panels = [(title, [k for k in keys if k in records[0]], unit) for title, keys, unit in panels]
    panels = [p for p in panels if p[1]]
    figure, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for axis, (title, keys, unit) in zip(axes[0], panels):
        for key in keys:
            axis.plot(steps, [r[key] for r in records], label=LOSS_LABELS[key])
        axis.set(title=title, xlabel="step", ylabel=unit)
        axis.grid(alpha=0.3)
        if len(keys) > 1:
            axis.legend()
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)
