"""The training loop, on Hugging Face Accelerate (devices, mixed precision, gradient accumulation).

One flat loop: AdamW with two learning rates, linear warm-up and decay, clipping, dev evaluation
of every trained side after each epoch, best-on-dev checkpoint, early stopping, a JSON-lines log.
"""

from __future__ import annotations

import json
import math
import resource
import shutil
import sys
import time
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Protocol

import torch
from accelerate import Accelerator, DataLoaderConfiguration
from accelerate.utils import DistributedDataParallelKwargs, set_seed
from torch.optim.lr_scheduler import LambdaLR
from tqdm.auto import tqdm
from transformers import get_linear_schedule_with_warmup

from .data.batching import Collator, EpochWindows, train_loader
from .data.features import Featurizer
from .model_card import write_model_card
from .modeling.kernels import attention_kernels
from .modeling.loading import first_line
from .noise import lowercase_sentences, perturb_sentences
from .options import BUILTIN_CHAR_MODEL_TYPE, CHECKPOINT_DIR, DivergedError, UsageError, default_char_lr
from .plots import plot_training_curves
from .schema import TrainingOptions
from .tasks import Task

BEST_DIR = "model"
CURVES_PNG = "training_curves.png"
METRICS_LOG = "metrics.jsonl"
TRAINING_CONFIG = "training_config.json"


@dataclass(kw_only=True)
class TrainingConfig(TrainingOptions):
    """A training run: its options (:class:`~entangle.schema.TrainingOptions`), where it writes, and
    what its model card records."""

    output_dir: str
    resume: bool = False  # continue from output_dir/checkpoint
    data_description: str | None = None
    command: str | None = None


def character_rate(config, lr: float, new_lr: float | None) -> float:
    """The character encoder's rate unless told (:func:`~entangle.options.default_char_lr`), its
    kind told from the model's config: the same as ``entangle train`` tells from the encoder's name
    before the model exists, and still there when the directory the name pointed to is gone (a
    saved model fine-tuned again elsewhere: read from that path, the built-in encoder was taken for
    a transformer and trained at a tenth of its rate)."""
    builtin = getattr(config.char_config, "model_type", None) == BUILTIN_CHAR_MODEL_TYPE
    return default_char_lr(builtin, config.char_encoder_pretrained, lr, new_lr)


def parameter_groups(model, lr: float, new_lr: float, weight_decay: float, char_lr: float | None = None) -> list[dict]:
    """New layers (``new_lr``), the pretrained subword encoder (``lr``) and the character encoder
    (``char_lr``, by default :func:`character_rate`), each with and without weight decay (biases,
    norms), in that order (a checkpoint's optimizer state is matched to them by position)."""
    config = model.config
    char_lr = character_rate(config, lr, new_lr) if char_lr is None else char_lr
    subword = "entangle.subword_encoder." if config.subword_encoder_pretrained and config.uses_subword else None
    rates = (new_lr, lr, char_lr)  # by kind: new, pretrained subword encoder, character encoder
    groups: dict[tuple[int, bool], list] = {}
    for name, param in model.named_parameters():
        if param.requires_grad:
            kind = 2 if name.startswith("entangle.char_encoder.") else int(subword is not None and name.startswith(subword))
            groups.setdefault((kind, param.ndim >= 2), []).append(param)
    return [
        {"params": params, "lr": rates[kind], "weight_decay": weight_decay if decay else 0.0}
        for (kind, decay), params in sorted(groups.items())
    ]


def adamw(groups: list[dict], **options) -> torch.optim.AdamW:
    """AdamW with the fused kernel where the parameters' device has one (CPU, CUDA): one pass per
    tensor instead of a dozen element-wise operations. The same update rule; on 2 CPU cores its
    step over the 39 M parameters of m=2 takes 0.022 s instead of 0.100 s (benchmarks/RESULTS.md)."""
    devices = {param.device.type for group in groups for param in group["params"]}
    return torch.optim.AdamW(groups, fused=devices <= {"cpu", "cuda"} or None, **options)


def freeze_subword_embeddings(model) -> None:
    """Keep the subword encoder's input (word piece) embeddings fixed: no gradient, no optimizer state."""
    encoder = model.entangle.subword_encoder
    if encoder is not None:
        encoder.get_input_embeddings().weight.requires_grad_(False)


def peak_memory_mb() -> float:
    """This process's peak resident memory so far (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def device_name(device: torch.device) -> str:
    """What a run trained on: training times compare only like with like."""
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    threads = torch.get_num_threads()
    return f"{device.type}, {threads} thread{'s' * (threads != 1)}"


def swap_in(temporary: Path, directory: Path) -> None:
    """Replace ``directory`` by the complete ``temporary``: a kill at any moment leaves either the
    previous complete directory or the new one (at worst as ``.old`` beside ``.tmp``)."""
    previous = directory.with_name(directory.name + ".old")
    if directory.exists():
        directory.rename(previous)
    temporary.rename(directory)
    shutil.rmtree(previous, ignore_errors=True)


def _temporary(directory: Path) -> Path:
    temporary = directory.with_name(directory.name + ".tmp")
    shutil.rmtree(temporary, ignore_errors=True)
    return temporary


def save_checkpoint(accelerator: Accelerator, directory: Path) -> None:
    """``Accelerator.save_state`` into a temporary directory, then swapped in: a kill at any
    moment leaves a complete checkpoint."""
    temporary = directory.with_name(directory.name + ".tmp")
    if accelerator.is_main_process:
        _temporary(directory)
    accelerator.wait_for_everyone()
    accelerator.save_state(temporary)  # every rank takes part; the main process writes
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        swap_in(temporary, directory)


def load_checkpoint(accelerator: Accelerator, directory: Path) -> None:
    """``Accelerator.load_state`` of a run's checkpoint; one that does not fit the model or its
    optimizer (saved by another entangle version, or with other options) is a :class:`UsageError`."""
    if not directory.is_dir():
        raise FileNotFoundError(f"{directory}: no checkpoint to resume from")
    try:
        accelerator.load_state(directory)
    except (ValueError, RuntimeError) as error:  # optimizer groups: by position and size; model: keys and shapes
        if isinstance(error, RuntimeError) and "Error(s) in loading state_dict" not in str(error):
            raise
        raise UsageError(f"{directory}: does not fit this model or its optimizer ({first_line(error)}); it was saved "
                         "by another entangle version or with other options: start the run again") from None


class LoopState:
    """Where the loop is, beyond what Accelerate checkpoints itself (model, optimizer, scheduler,
    random states): enough to continue an interrupted run exactly as if it had not stopped."""

    def __init__(self, generator: torch.Generator):
        self.generator = generator
        self.epoch = 1
        self.batches_done = 0  # batches of the current epoch already trained on
        self.step = 0  # optimizer steps
        self.loss_sum = 0.0  # over the current epoch's batches
        self.best = {"epoch": None, "score": -math.inf, "dev": None}
        self.epochs_without_gain = 0
        self.lr_halvings = 0  # --lr-schedule plateau: epochs without a dev gain so far
        self.log_lines = 0
        # The last epoch's batches trained and its batches, where max_steps ended it before its end.
        self.cut: dict[str, int] | None = None
        self.elapsed = 0.0
        self.peak_memory_mb = 0.0  # over every process that trained this run (a resumed one too)
        self.peak_gpu_memory_mb = 0.0
        self.devices: list[str] = []  # a resumed run may go on elsewhere
        # The shuffling generator as it was when the current epoch drew its batch order.
        self.epoch_generator_state = generator.get_state()

    _FIELDS = ("epoch", "batches_done", "step", "loss_sum", "best", "epochs_without_gain", "lr_halvings", "log_lines",
               "cut", "elapsed", "peak_memory_mb", "peak_gpu_memory_mb", "devices")

    def state_dict(self) -> dict:
        # The generator itself too: Accelerate's random states do not cover it, and a run resumed from
        # an epoch's closing checkpoint draws the next epoch's batch order from it.
        return {**{name: getattr(self, name) for name in self._FIELDS},
                "epoch_generator_state": self.epoch_generator_state, "generator_state": self.generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        for name in self._FIELDS:
            setattr(self, name, state.get(name, getattr(self, name)))  # a field added since: its start value
        self.epoch_generator_state = state["epoch_generator_state"]
        if "generator_state" in state:  # a checkpoint from before it was kept: the seed's state, as then
            self.generator.set_state(state["generator_state"])


def _halving_after_warmup(warmup_steps: int, state: LoopState) -> Callable[[int], float]:
    """``--lr-schedule plateau``'s factor of each group's rate: a linear warm-up, then halved once per
    epoch without a dev gain (read from ``state``, so a resumed run goes on at its rate)."""
    return lambda step: (min(1.0, step / warmup_steps) if warmup_steps else 1.0) * 0.5 ** state.lr_halvings


def _apply_rates(scheduler: LambdaLR) -> None:
    """Each group's rate as the schedule gives it now: ``LambdaLR`` reads a changed factor only in
    its next ``step``, which follows the optimizer's."""
    for group, base, factor in zip(scheduler.optimizer.param_groups, scheduler.base_lrs, scheduler.lr_lambdas):
        group["lr"] = base * factor(scheduler.last_epoch)


class Trainee(Protocol):
    """What :func:`train` uses of what it trains: the :class:`~entangle.predict.Tagger`, which calls
    it (``Tagger.fit``), so that this module needs nothing above it."""

    model: torch.nn.Module
    featurizer: Featurizer
    collator: Collator

    @property
    def task(self) -> Task: ...

    @property
    def labels(self) -> list[str]: ...

    def evaluate(self, examples: list, what: str, accelerator: Accelerator | None = None,
                 return_predictions: bool = False): ...

    def save_pretrained(self, path: str | Path) -> None: ...


def train(tagger: Trainee, train_sentences: list, dev_sentences: list | None, config: TrainingConfig) -> dict:
    """Fine-tune ``tagger.model`` in place; the best-on-dev model is saved in ``output_dir/model``.

    With ``config.resume`` the run continues from ``output_dir/checkpoint``. Returns the summary
    (best epoch, its dev metrics per side, training time).
    """
    if not train_sentences:
        raise ValueError("no training examples: nothing to train on")
    if dev_sentences is not None and not dev_sentences:
        raise ValueError("no dev examples: give some, or dev=None to keep the model of the lowest training loss")
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    if config.resume:
        config = _as_recorded(config, output / TRAINING_CONFIG)
    # Under DDP (several processes) some parameters get no gradient: the subword encoder's pooler,
    # and in a one-sided model the other side's last co-attention module; DDP must be told.
    # Batches are copied to a GPU from pinned memory without waiting (non_blocking), as in predict:
    # the host goes on to the next step while the copy and the step before run.
    accelerator = Accelerator(gradient_accumulation_steps=config.gradient_accumulation_steps,
                              mixed_precision=config.mixed_precision,
                              dataloader_config=DataLoaderConfiguration(non_blocking=True),
                              kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    set_seed(config.seed)
    model = tagger.model
    label2id = model.config.label2id
    tagger.task.check_labels(train_sentences, tagger.labels, "the training data")
    if dev_sentences is not None:  # before training, not after its first epoch
        tagger.task.check_labels(dev_sentences, tagger.labels, "the dev data")
    if config.train_noise and tagger.task.unit == "char":
        raise ValueError("train_noise changes characters, so it cannot keep per-character labels (task "
                         f"{tagger.task.name}); it is for word and text labels")
    label_ids = [[label2id[label] for label in tagger.task.gold(s)] for s in train_sentences]

    redrawn = bool(config.train_noise or config.train_lowercase)  # a training copy of each epoch's own

    def epoch_windows(epoch: int | None):
        """The training windows; with ``train_noise`` or ``train_lowercase``, of that epoch's own noisy or
        partly lower-cased copy."""
        sentences = train_sentences
        if config.train_noise and epoch is not None:  # a different draw each epoch
            sentences = perturb_sentences(sentences, config.train_noise_attacks, config.train_noise,
                                          config.seed + 1000 * epoch)
        if config.train_lowercase and epoch is not None:
            sentences = lowercase_sentences(sentences, config.train_lowercase, config.seed + 1000 * epoch)
        return tagger.featurizer.featurize([s.words for s in sentences], label_ids)

    generator = torch.Generator().manual_seed(config.seed)
    windows = EpochWindows(epoch_windows)
    loader = train_loader(windows, config.batch_size, tagger.collator, generator, config.group_by_length,
                          pin_memory=accelerator.device.type == "cuda")
    if config.freeze_subword_embeddings:
        freeze_subword_embeddings(model)
    if config.char_lr is None:  # resolved here too, so that training_config.json records the rate used
        config = replace(config, char_lr=character_rate(model.config, config.lr, config.new_lr))
    if config.new_lr is None:
        config = replace(config, new_lr=tagger.task.new_lr)
    optimizer = adamw(parameter_groups(model, config.lr, config.new_lr, config.weight_decay, config.char_lr))
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    steps_per_epoch = math.ceil(len(loader) / config.gradient_accumulation_steps)
    # The linear decay's length. With a copy drawn per epoch (noise, lower-casing) an estimate: a
    # copy may be cut into a few more or fewer windows. The epochs are trained whole all the same
    # (they ended early when the copies ran past it), the rate held at 0 past the estimate.
    total_steps = steps_per_epoch * config.epochs
    if config.max_steps is not None:
        total_steps = min(total_steps, config.max_steps)
    state = LoopState(generator)
    if config.lr_schedule == "plateau":
        scheduler = LambdaLR(optimizer, _halving_after_warmup(
            int(config.warmup_ratio * steps_per_epoch) * accelerator.num_processes, state))
    else:
        scheduler = get_linear_schedule_with_warmup(
            optimizer, int(config.warmup_ratio * total_steps) * accelerator.num_processes,
            total_steps * accelerator.num_processes,
        )
    scheduler = accelerator.prepare(scheduler)
    accelerator.register_for_checkpointing(state)
    if config.resume:
        load_checkpoint(accelerator, output / CHECKPOINT_DIR)
    (output / TRAINING_CONFIG).write_text(json.dumps(asdict(config), indent=2))

    def account() -> None:
        """Time, memory and devices so far into the state (what a checkpoint and the summary record)."""
        nonlocal started
        state.elapsed += time.perf_counter() - started
        state.peak_memory_mb = max(state.peak_memory_mb, peak_memory_mb())
        if accelerator.device.type == "cuda":
            state.peak_gpu_memory_mb = max(state.peak_gpu_memory_mb, torch.cuda.max_memory_allocated() / 2**20)
        state.devices = sorted({*state.devices, device_name(accelerator.device)})
        started = time.perf_counter()

    def checkpoint() -> None:
        account()
        if accelerator.num_processes > 1:
            # The main process alone writes the loop state, which every process reads back: each
            # holds the mean of their sums, so the epoch's summed loss is the same resumed or not.
            state.loss_sum = accelerator.reduce(
                torch.tensor(state.loss_sum, dtype=torch.float64, device=accelerator.device), "mean").item()
        save_checkpoint(accelerator, output / CHECKPOINT_DIR)

    def finished() -> bool:
        out_of_patience = config.patience > 0 and state.epochs_without_gain >= config.patience
        return state.epoch > config.epochs or out_of_steps() or out_of_patience

    def out_of_steps() -> bool:
        return config.max_steps is not None and state.step >= config.max_steps

    main_score = tagger.task.main_score
    predict_side = tagger.model.config.predict_side
    log_path = output / METRICS_LOG
    warned: set[str] = set()  # the heads whose collapse was reported (before a resume too)
    if accelerator.is_main_process:
        # Drop log lines written after the checkpoint we resume from (they will be written again).
        kept = log_path.read_text().splitlines()[: state.log_lines] if config.resume and log_path.exists() else []
        log_path.write_text("".join(line + "\n" for line in kept))
        warned.update(side for line in kept for side in json.loads(line).get("collapsed", {}))
    dev_labels = {label for example in dev_sentences or () for label in tagger.task.gold(example)}
    started = time.perf_counter()
    # Drawn once a second on a terminal (each draw reads the loss, a wait for a GPU); redirected to a
    # file, rarely instead of on every step.
    progress = tqdm(total=total_steps, initial=state.step, desc="training",
                    disable=not accelerator.is_local_main_process, mininterval=1 if sys.stderr.isatty() else 30)
    diverged: dict | None = None
    while not finished():
        model.train()
        if redrawn:  # drawn again from the epoch's seed, also when resuming mid-epoch
            windows.redraw(state.epoch)
        # Accelerate divides every batch's loss by the accumulation steps, also in an epoch's last
        # group when it is short: that group's losses are scaled back up to a mean over its own
        # batches (counted per epoch: a redrawn copy may cut another number of windows).
        short_group = len(loader) % config.gradient_accumulation_steps
        if state.batches_done == 0:
            state.epoch_generator_state = generator.get_state()
            batches = loader
        else:  # resuming mid-epoch: draw the same batch order, skip what was already trained on
            generator.set_state(state.epoch_generator_state)
            batches = accelerator.skip_first_batches(loader, state.batches_done)
        # The epoch's summed loss stays on the device, added in float64 as the host would, and is read
        # (a wait for the device) only when the bar is drawn, at a checkpoint and at the epoch's end:
        # a read every batch kept the host from collating the next batch while the GPU computed.
        summed_loss = torch.tensor(state.loss_sum, dtype=_sum_dtype(accelerator.device), device=accelerator.device)

        def read_loss() -> None:
            state.loss_sum = summed_loss.item()

        for batch in batches:
            with accelerator.accumulate(model), attention_kernels(accelerator.device):
                loss = model(**batch).loss
                in_short_group = short_group and state.batches_done >= len(loader) - short_group
                accelerator.backward(loss * (config.gradient_accumulation_steps / short_group) if in_short_group else loss)
                if accelerator.sync_gradients:
                    accelerator.clip_grad_norm_(model.parameters(), config.max_grad_norm)
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
            summed_loss += loss.detach()
            state.batches_done += 1
            if accelerator.sync_gradients:
                state.step += 1
                if progress.update(1):  # the bar was drawn: its loss follows
                    read_loss()
                    progress.set_postfix(epoch=state.epoch, loss=f"{state.loss_sum / state.batches_done:.4f}")
                if out_of_steps():
                    break
                if config.save_steps and state.step % config.save_steps == 0:
                    if diverged := _diverged(model, state, config):
                        break
                    read_loss()
                    checkpoint()
                    summed_loss.fill_(state.loss_sum)  # under several processes, their mean now
        read_loss()
        # Before anything is saved: the last checkpoint and the best model stay those of finite weights.
        if diverged or (diverged := _diverged(model, state, config)):
            break
        if out_of_steps() and state.batches_done < len(loader):  # the last epoch, cut short
            state.cut = {"batches": state.batches_done, "of": len(loader)}
        # Every process's batches: each decides alone on the best epoch and on stopping (without a
        # dev set by this loss), and processes that decided differently would wait on each other.
        loss_sum, batches_done = state.loss_sum, state.batches_done
        if accelerator.num_processes > 1:
            loss_sum, batches_done = accelerator.reduce(
                torch.tensor([loss_sum, batches_done], dtype=torch.float64, device=accelerator.device), "sum").tolist()
        record = {"epoch": state.epoch, "step": state.step, "train_loss": loss_sum / max(batches_done, 1),
                  "elapsed_s": round(state.elapsed + time.perf_counter() - started, 1), **({"cut": state.cut} if state.cut else {})}
        tagger.model = accelerator.unwrap_model(model)
        if dev_sentences:
            # Every process scores a share of the dev windows and receives the same metrics.
            record["dev"], predicted = tagger.evaluate(dev_sentences, "the dev set", accelerator, return_predictions=True)
            current = record["dev"][predict_side][main_score]
            if collapsed := collapsed_heads(predicted, dev_labels):
                record["collapsed"] = collapsed
        else:
            current = -record["train_loss"]
        if current > state.best["score"]:
            state.best = {"epoch": state.epoch, "score": current, "dev": record.get("dev")}
            state.epochs_without_gain = 0
            if accelerator.is_main_process:
                temporary = _temporary(output / BEST_DIR)
                tagger.save_pretrained(temporary)
                swap_in(temporary, output / BEST_DIR)
        else:
            state.epochs_without_gain += 1
            if config.lr_schedule == "plateau":
                state.lr_halvings += 1
                _apply_rates(scheduler.scheduler)  # from the next epoch's first step, not its second
        if accelerator.is_main_process:
            with open(log_path, "a") as log:
                log.write(json.dumps(record) + "\n")
            plot_training_curves(log_path, output / CURVES_PNG, main_score)
            progress.write(_epoch_line(record, main_score), file=sys.stderr)
            warn_collapse(record.get("collapsed", {}), tagger.task.unit, state.epoch, config.new_lr, warned)
        state.log_lines += 1
        state.epoch += 1
        state.batches_done, state.loss_sum = 0, 0.0
        checkpoint()
    progress.close()
    if diverged:  # ended without the epoch's checkpoint: its time still counts
        account()
    accelerator.wait_for_everyone()
    summary = {"best_epoch": state.best["epoch"], "best_dev": state.best["dev"], "train_time_s": round(state.elapsed, 1),
               "epochs": state.log_lines, "steps": state.step, "processes": accelerator.num_processes,
               "peak_memory_mb": round(max(state.peak_memory_mb, peak_memory_mb())),
               "devices": state.devices, **({"peak_gpu_memory_mb": round(state.peak_gpu_memory_mb)}
                                            if state.peak_gpu_memory_mb else {}), **({"diverged": diverged} if diverged else {}),
               **({"last_epoch_cut": state.cut} if state.cut else {})}
    if accelerator.is_main_process:
        (output / "train_summary.json").write_text(json.dumps(summary, indent=2))
        if (output / BEST_DIR).is_dir():
            write_model_card(output / BEST_DIR, tagger.model.config, summary, config)
    tagger.model = accelerator.unwrap_model(model)
    return summary


def _as_recorded(config: TrainingConfig, recorded_file: Path) -> TrainingConfig:
    """``config`` of a resumed run, checked against the options the run recorded when it started
    (``entangle train --resume`` reads them back itself): another epoch count or ``max_steps``
    changed the linear schedule's length mid-run, other rates were ignored (the checkpoint's came
    back) and another batch size skipped other batches than those trained on. A rate left to its
    default (``None``) is the one the run started with, should the default have changed since."""
    if not recorded_file.is_file():  # a checkpoint of a version that did not record them
        return config
    # As these options read it today (an older version recorded patience None for 0), but for the
    # rates it left unresolved (None) and save_steps, which places checkpoints and changes nothing.
    recorded = json.loads(recorded_file.read_text())
    known = {item.name: recorded[item.name] for item in fields(TrainingOptions) if item.name in recorded}
    recorded = {name: value for name, value in _as_json(TrainingOptions(**known)).items()
                if name in known and known[name] is not None and name != "save_steps"}
    config = replace(config, **{name: recorded[name] for name in ("char_lr", "new_lr")
                                if getattr(config, name) is None and name in recorded})
    given = _as_json(config)
    if differ := [f"{name} {value!r} -> {given[name]!r}" for name, value in recorded.items() if given[name] != value]:
        raise UsageError(f"{config.output_dir}: a resumed run goes on with the options it started with, and these "
                         f"differ from those in its {TRAINING_CONFIG}: {', '.join(differ)}; give them as recorded, "
                         "or train anew in another output directory")
    return config


def _as_json(options: TrainingOptions) -> dict:
    """The options' values as JSON has them (tuples are lists)."""
    return json.loads(json.dumps(asdict(options)))


def _sum_dtype(device: torch.device) -> torch.dtype:
    """float64 for the loss summed on ``device``, as a Python float sums it; MPS has no float64."""
    return torch.float32 if device.type == "mps" else torch.float64


def _diverged(model: torch.nn.Module, state: LoopState, config: TrainingConfig) -> dict | None:
    """Where the weights stopped being finite (``None`` while they are): they cannot recover. A run
    with a best model ends there, like an early stop, with a warning; one without (it diverged
    before its first epoch's end, or gained nothing since) stops with a :class:`DivergedError`.
    Unchecked, a run without a dev set saw its NaN training loss never count as better and went on,
    saying nothing."""
    if torch.stack([torch.isfinite(p).all() for p in model.parameters()]).all():  # one wait for the GPU, not one a tensor
        return None
    where = f"{config.output_dir}: training diverged in epoch {state.epoch} (by step {state.step}): the weights are NaN or infinite"
    remedy = (f"a lower --lr or --new-lr (now {config.lr:g} and {config.new_lr:g}), or no --mixed-precision fp16, "
              "may train further")
    if state.best["epoch"] is None:
        raise DivergedError(f"{where}, and no epoch was kept; train again with {remedy}")
    warnings.warn(f"{where}; the run ends with its best model, of epoch {state.best['epoch']} ({remedy})", stacklevel=2)
    return {"epoch": state.epoch, "step": state.step}


def collapsed_heads(predicted: dict[str, list[list[str]]], gold_labels: set[str]) -> dict[str, str]:
    """``{head: label}`` for each head that gave every dev unit one label where the gold has several:
    a head that has not begun to learn, or has collapsed (a deep co-attention stack, or text
    classification, at a high rate for the new parts: benchmarks/RESULTS.md); its scores are a constant's."""
    if len(gold_labels) < 2:
        return {}
    labels = {side: {label for example in per_example for label in example} for side, per_example in predicted.items()}
    return {side: next(iter(found)) for side, found in labels.items() if len(found) == 1}


def warn_collapse(collapsed: dict[str, str], unit: str, epoch: int, new_lr: float, warned: set[str]) -> None:
    """One warning per head, the first epoch it is seen collapsed."""
    for side, label in collapsed.items():
        if side not in warned:
            warned.add(side)
            warnings.warn(f"after epoch {epoch} the {side} head labels every dev {unit} {label!r}: it has not begun to "
                          f"learn, or has collapsed; if it stays so, try a --new-lr below {new_lr:g}", stacklevel=2)


def _epoch_line(record: dict, main_score: str) -> str:
    parts = [f"epoch {record['epoch']}", f"loss {record['train_loss']:.4f}"]
    for side, metrics in (record.get("dev") or {}).items():
        parts.append(f"dev {side} {main_score} {metrics[main_score]:.4f}")
    return " | ".join(parts)
