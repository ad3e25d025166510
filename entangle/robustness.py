"""Scores of trained models on clean and noisy copies of a test set: tables and noise curves.

Its figure needs the plots extra: without matplotlib, importing this module raises
``MissingExtraError``, before any model is evaluated."""

from __future__ import annotations

import json
from pathlib import Path

from .data.conll import Sentence
from .noise import perturb_sentences
from .options import UsageError
from .plots import pyplot
from .predict import Tagger

plt = pyplot()


def noise_curves(taggers: dict[str, Tagger], sentences: list[Sentence], attacks: list[str], rates: list[float],
                 seed: int = 0) -> list[dict]:
    """One row per model, side, attack and rate: the main score and its drop from the clean score.

    Every model sees the same noisy copies (same seed); rate 0 is the clean set, scored once.
    Character-level tasks are not supported: misspelling a word changes the characters its gold
    labels belong to.
    """
    for name, tagger in taggers.items():  # every model checked before any is scored
        if tagger.task.unit == "char":
            raise UsageError(f"{name}: noise curves need word or text labels, not per-character ones ({tagger.task.name})")
        tagger.task.check_labels(sentences, tagger.labels, f"for model {name}, the clean set")
    clean = {name: tagger.evaluate(sentences, "the clean set") for name, tagger in taggers.items()}
    rows = []
    for attack in attacks:
        for rate in rates:
            noisy = perturb_sentences(sentences, attack, rate, seed) if rate > 0 else sentences
            for name, tagger in taggers.items():
                results = tagger.evaluate(noisy, f"{attack} at rate {rate}") if rate > 0 else clean[name]
                score_name = tagger.task.main_score
                for side, metrics in results.items():
                    base = clean[name][side][score_name]
                    score = metrics[score_name]
                    rows.append({"model": name, "side": side, "attack": attack, "rate": rate, "metric": score_name,
                                 "score": score, "drop": base - score,
                                 "relative_drop": (base - score) / base if base else 0.0})
    return rows


def write_report(rows: list[dict], directory: str | Path, title: str) -> None:
    """``noise_curves.json``, a Markdown table (``noise_curves.md``) and a plot (``noise_curves.png``)."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "noise_curves.json").write_text(json.dumps(rows, indent=2))
    attacks = list(dict.fromkeys(r["attack"] for r in rows))
    rates = sorted({r["rate"] for r in rows})
    systems = list(dict.fromkeys((r["model"], r["side"]) for r in rows))
    metric = rows[0]["metric"]
    lines = [f"### {title}", "", f"{metric} × 100 (drop from clean in parentheses; relative loss at the highest rate last)", ""]
    header = "| model | side | attack | " + " | ".join(f"rate {r:g}" for r in rates) + " | relative loss |"
    lines += [header, "|" + "---|" * (len(rates) + 4)]
    for attack in attacks:
        for model, side in systems:
            cells = {r["rate"]: r for r in rows if (r["model"], r["side"], r["attack"]) == (model, side, attack)}
            # 0.0 - drop, not -drop: no change is (+0.00), not (-0.00).
            values = [f"{100 * cells[x]['score']:.2f}" + (f" ({100 * (0.0 - cells[x]['drop']):+.2f})" if x else "")
                      for x in rates]
            lines.append(f"| {model} | {side} | {attack} | " + " | ".join(values)
                         + f" | {100 * cells[rates[-1]]['relative_drop']:.1f}% |")
    (directory / "noise_curves.md").write_text("\n".join(lines) + "\n")

    columns = min(len(attacks), 4)
    figure_rows = -(-len(attacks) // columns)
    # At least 9 inches wide, and a band below the panels for the legend, however few panels.
    figure, axes = plt.subplots(figure_rows, columns, figsize=(max(9.0, 4.5 * columns), 3.6 * figure_rows + 1.4),
                                squeeze=False)
    for axis, attack in zip(axes.flat, attacks):
        for model, side in systems:
            points = sorted((r["rate"], r["score"]) for r in rows
                            if (r["model"], r["side"], r["attack"]) == (model, side, attack))
            axis.plot([p[0] for p in points], [100 * p[1] for p in points], marker="o", label=f"{model} ({side})")
        axis.set(title=attack, xlabel="share of eligible words perturbed", ylabel=f"{metric} × 100")
        axis.grid(alpha=0.3)
    for axis in list(axes.flat)[len(attacks):]:
        axis.axis("off")
    handles, labels = axes.flat[0].get_legend_handles_labels()
    figure.legend(handles, labels, loc="lower center", ncol=min(len(labels), 3), fontsize="small")
    figure.suptitle(title, fontsize="medium")
    legend_rows = -(-len(labels) // 3)
    figure.tight_layout(rect=(0, (0.25 * legend_rows + 0.1) / figure.get_figheight(), 1, 0.95))
    figure.savefig(directory / "noise_curves.png", dpi=100)
    plt.close(figure)
