"""The training loop, on Hugging Face Accelerate (devices, mixed precision, gradient accumulation).

One flat loop: AdamW with two learning rates, linear warm-up and decay, clipping, dev evaluation
of every trained side after each epoch, best-on-dev checkpoint, early stopping, a JSON-lines log.
"""

from __future__ import annotations

import json
import math
import shutil
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from accelerate import Accelerator
from accelerate.utils import set_seed
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from .data.batching import Collator, train_loader
from .data.conll import Sentence
from .metrics import MAIN_SCORE
from .predict import Tagger

BEST_DIR = "model"
METRICS_LOG = "metrics.jsonl"


@dataclass
class TrainingConfig:
    output_dir: str
    epochs: int = 5
    batch_size: int = 16
    eval_batch_size: int = 64
    # Pretrained encoders fine-tune gently; the co-attention modules, projections, heads and any
    # randomly initialised encoder start from scratch and need a larger step to learn in time.
    lr: float = 5e-5
    new_lr: float = 5e-4
    warmup_ratio: float = 0.1
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    patience: int | None = 3  # epochs without dev improvement before stopping; None: never stop early
    seed: int = 42
    group_by_length: bool = True
    gradient_accumulation_steps: int = 1
    mixed_precision: str = "no"
    max_steps: int | None = None  # stop after this many optimizer steps (quick runs, tests)


def parameter_groups(model, lr: float, new_lr: float, weight_decay: float) -> list[dict]:
    """Four groups: pretrained vs new parameters, with vs without weight decay (biases, norms)."""
    config = model.config
    pretrained_prefixes = tuple(
        f"entangle.{side}_encoder."
        for side in ("char", "subword")
        if getattr(config, f"{side}_encoder_pretrained") and getattr(config, f"uses_{side}")
    )
    groups: dict[tuple[bool, bool], list] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            key = (name.startswith(pretrained_prefixes), param.ndim >= 2)
            groups.setdefault(key, []).append(param)
    return [
        {"params": params, "lr": lr if pretrained else new_lr, "weight_decay": weight_decay if decay else 0.0}
        for (pretrained, decay), params in sorted(groups.items())
    ]


def save_atomically(tagger: Tagger, directory: Path) -> None:
    """Write to a temporary directory, then swap it in: a kill never leaves a half-written model."""
    temporary = directory.with_name(directory.name + ".tmp")
    previous = directory.with_name(directory.name + ".old")
    shutil.rmtree(temporary, ignore_errors=True)
    tagger.save_pretrained(temporary)
    if directory.exists():
        directory.rename(previous)
    temporary.rename(directory)
    shutil.rmtree(previous, ignore_errors=True)


def train(tagger: Tagger, train_sentences: list[Sentence], dev_sentences: list[Sentence] | None,
          config: TrainingConfig) -> dict:
    """Fine-tune ``tagger.model`` in place; the best-on-dev model is saved in ``output_dir/model``.

    Returns the summary (best epoch, its dev metrics per side, training time).
    """
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    accelerator = Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps,
                              mixed_precision=config.mixed_precision)
    set_seed(config.seed)
    model = tagger.model
    label2id = model.config.label2id
    windows = tagger.featurizer.featurize(
        [s.words for s in train_sentences], [[label2id[tag] for tag in s.tags] for s in train_sentences]
    )
    generator = torch.Generator().manual_seed(config.seed)
    loader = train_loader(windows, config.batch_size, tagger.collator, generator, config.group_by_length)
    optimizer = torch.optim.AdamW(parameter_groups(model, config.lr, config.new_lr, config.weight_decay))
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    steps_per_epoch = math.ceil(len(loader) / config.gradient_accumulation_steps)
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    scheduler = get_linear_schedule_with_warmup(
        optimizer, int(config.warmup_ratio * total_steps) * accelerator.num_processes,
        total_steps * accelerator.num_processes,
    )
    scheduler = accelerator.prepare(scheduler)
    (output / "training_config.json").write_text(json.dumps(asdict(config), indent=2))

    main_score = MAIN_SCORE[tagger.model.config.task]
    predict_side = tagger.model.config.predict_side
    best = {"epoch": None, "score": -math.inf}
    log = open(output / METRICS_LOG, "w") if accelerator.is_main_process else None
    started = time.perf_counter()
    step = 0
    epochs_without_gain = 0
    # Redirected to a file, the bar is refreshed rarely instead of on every step.
    progress = tqdm(total=total_steps, desc="training", disable=not accelerator.is_local_main_process,
                    mininterval=0.1 if sys.stderr.isatty() else 30)
    for epoch in range(1, config.epochs + 1):
        model.train()
        running, seen = 0.0, 0
        for batch in loader:
            with accelerator.accumulate(model):
                loss = model(**batch).loss
                accelerator.backward(loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            running += loss.item()
            seen += 1
            if accelerator.sync_gradients:
                step += 1
                progress.update(1)
                progress.set_postfix(epoch=epoch, loss=f"{running / seen:.4f}")
                if step == total_steps:
                    break
        record = {"epoch": epoch, "step": step, "train_loss": running / max(seen, 1),
                  "elapsed_s": round(time.perf_counter() - started, 1)}
        if accelerator.is_main_process:
            tagger.model = accelerator.unwrap_model(model)
            if dev_sentences:
                record["dev"] = tagger.evaluate(dev_sentences, "the dev set")
                current = record["dev"][predict_side][main_score]
            else:
                current = -record["train_loss"]
            if current > best["score"]:
                best = {"epoch": epoch, "score": current, "dev": record.get("dev")}
                save_atomically(tagger, output / BEST_DIR)
                epochs_without_gain = 0
            else:
                epochs_without_gain += 1
            log.write(json.dumps(record) + "\n")
            log.flush()
            progress.write(_epoch_line(record, main_score), file=sys.stderr)
        if step == total_steps or (config.patience is not None and epochs_without_gain >= config.patience):
            break
    progress.close()
    accelerator.wait_for_everyone()
    summary = {"best_epoch": best["epoch"], "best_dev": best.get("dev"), "train_time_s": round(time.perf_counter() - started, 1),
               "steps": step}
    if accelerator.is_main_process:
        log.close()
        (output / "train_summary.json").write_text(json.dumps(summary, indent=2))
    tagger.model = accelerator.unwrap_model(model)
    return summary


def _epoch_line(record: dict, main_score: str) -> str:
    parts = [f"epoch {record['epoch']}", f"loss {record['train_loss']:.4f}"]
    for side, metrics in (record.get("dev") or {}).items():
        parts.append(f"dev {side} {main_score} {metrics[main_score]:.4f}")
    return " | ".join(parts)
