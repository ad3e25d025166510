"""A model card (README.md with Hugging Face metadata) for a trained model directory."""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path

import yaml

from .options import BUILTIN_CHAR, HUB_NAMES, SHIPPED_CHAR
from .tasks import get_task


_EXAMPLE_CALL = {"word": 'tag_text(["Going to see Lady Gaga in Paris tonite"])',
                 "char": 'tag_chars([["a", "word"]])', "text": 'classify(["what a day"])'}


def write_model_card(directory: Path, config, summary: dict, training) -> None:
    """What the model is (backbones, m, sides), what it was trained on, how well it did on dev,
    and the command that made it, so the directory can be shared on a hub as it is."""
    task = get_task(config.task)
    score = task.main_score
    # No pipeline_tag: transformers' pipelines feed a tokenizer's inputs alone, and the model also
    # reads characters (the hub's widget would fail on it).
    metadata = {"library_name": "entangle", "tags": ["entangle", "character-level", "subword", config.task]}
    # Each encoder that came from a hub (not a local directory, not the built-in character encoder).
    bases = [HUB_NAMES.get(name, name) for name in (config.subword_encoder_name, config.char_encoder_name)
             if name and name != BUILTIN_CHAR and name not in SHIPPED_CHAR and not Path(name).exists()]
    if bases:
        metadata["base_model"] = bases[0] if len(bases) == 1 else bases
    lines = [
        "---", yaml.safe_dump(metadata, sort_keys=False).strip(), "---", "",
        f"# entangle {config.task} model", "",
        ("A CharBERT-style model (Ma et al., COLING 2020; fine-tuned without its NLM pretraining)"
         if config.fusion == "charbert" else "An entanglement model (Wang, Hu & Gormley, arXiv 2311.07853)")
        + " trained with [entangle](https://pypi.org/project/entangle-nlp/).", "",
        "| part | value |", "|---|---|",
        f"| character encoder | {config.char_encoder_name or '-'} ({config.char_config.model_type if config.char_config else 'unused'}) |",
        f"| subword encoder | {config.subword_encoder_name or '-'} ({config.subword_config.model_type if config.subword_config else 'unused'}) |",
        f"| fusion of characters and subwords | {config.fusion} |",
        f"| co-attention modules per side (m) | {config.num_coattention_layers} |",
        f"| trained sides / prediction side | {config.side} / {config.predict_side} |",
        f"| labels | {', '.join(config.id2label[i] for i in range(config.num_labels))} |",
        f"| training data | {training.data_description or 'not recorded'} |",
        "",
    ]
    cut = summary.get("last_epoch_cut")
    cut_note = f"; the last cut by max_steps after {cut['batches']} of its {cut['of']} batches" if cut else ""
    run = (f"epoch {summary['best_epoch']} of the {summary.get('epochs', training.epochs)} trained (at most "
           f"{training.epochs}{cut_note}), {summary['steps']} steps, {summary['train_time_s'] / 60:.1f} min")
    if summary.get("best_dev"):
        lines += [f"## Dev results (best {run})", "",
                  f"| side | {score} | precision | recall |" if config.task == "ner" else f"| side | {score} |",
                  "|---|---|---|---|" if config.task == "ner" else "|---|---|"]
    else:
        lines += ["## Training", "", f"No dev set: the model kept is that of the lowest training loss ({run})."]
    for side, metrics in (summary.get("best_dev") or {}).items():
        cells = [f"{100 * metrics[score]:.2f}"]
        if config.task == "ner":
            cells += [f"{100 * metrics['precision']:.2f}", f"{100 * metrics['recall']:.2f}"]
        lines.append(f"| {side} | " + " | ".join(cells) + " |")
    if diverged := summary.get("diverged"):
        lines += ["", f"Training diverged in epoch {diverged['epoch']} (by step {diverged['step']}: its weights became NaN "
                  "or infinite); this is the best model before it."]
    lines += ["", "## How it was trained", ""]
    if training.command:
        lines += ["```", training.command, "```", ""]
    # Not where it ran (a path on the trainer's machine) but what it computed.
    options = {k: v for k, v in asdict(training).items() if k not in ("command", "data_description", "output_dir", "resume")}
    lines += ["```json", json.dumps(options, indent=2), "```", "",
              "## Use", "", "```python", "from entangle import Tagger", "",
              'tagger = Tagger.from_pretrained("PATH")  # this directory, or its name on a hub',
              f'print(tagger.{_EXAMPLE_CALL[task.unit]})', "```", "",
              "transformers' Auto classes load it too once `import entangle.modeling` has registered its model "
              "type; it reads characters beside the subwords, which the `Tagger` prepares.", ""]
    (directory / "README.md").write_text("\n".join(lines), encoding="utf-8")
