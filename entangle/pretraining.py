"""Pretraining a character encoder without a hub, so the character side starts informed.

A from-scratch character encoder learns little from a few thousand labelled sentences. Two
objectives teach it from unlabelled text, alone or summed:

- ``mlm``, character masked language modelling: spans of 1 to ``max_span`` characters are
  masked (``mask_rate`` of the characters; 80% replaced by CANINE's mask code point, 10% by a
  random character of the batch, 10% kept) and the encoder's state at each masked position
  predicts the original code point. Targets are the code point's hash buckets (one classifier
  per hash function, the way the built-in encoder embeds characters), so every script works and
  no vocabulary is needed.
- ``distill``, distillation from a pretrained subword encoder (the idea of Char2Subword): the
  mean of the encoder's states over a word's characters, through a learned projection, is
  trained to match the frozen teacher's mean contextual state over that word's subwords (cosine,
  MSE, or ``centered``: cosine to the teacher states minus their mean over the batch's words. A
  teacher whose states all point one way (multilingual-e5-small: mean cosine 0.68-0.73 between
  the states of two tokens, MiniLM 0.06-0.15; ``benchmarks/teacher_anisotropy.py``) otherwise
  lets the student score well by matching that shared direction alone). With ``noise_rate > 0``
  the encoder also reads a noisy copy of each text (each of ``noise_attacks`` in turn on that
  share of eligible words: CharBERT's misspellings by default, ``lower`` for lower-casing, see
  :mod:`entangle.noise`) and is held to the *clean* text's
  teacher states, so misspellings (and, with an uncased teacher, lower-cased words) land near
  the clean spelling.

The loop mirrors :mod:`entangle.training`: Accelerate, length-grouped batches, warm-up and
linear decay over the budget (``max_steps``, or ``max_minutes`` when that ends first), checkpoints swapped in
atomically, exact resume (the mask generator's state included), a JSON-lines loss log and a
plot. The output directory *is* a character encoder from the first checkpoint on (rewritten at
each): ``--char OUTPUT`` loads it, also while a long run goes on.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
import torch.nn.functional as F
from accelerate import Accelerator
from accelerate.utils import DistributedDataParallelKwargs, set_seed
from torch import nn
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase

from .data.batching import pad_rows, subword_padding, train_loader
from .data.features import CHAR_CLS, CHAR_MASK, CHAR_PAD, CHAR_SEP, Featurizer, char_window, code_points
from .data.raw_text import RawCorpus
from .modeling.char_encoder import hash_code_points
from .modeling.encoders import char_window_limit, encode_chars, subword_window_limit
from .modeling.kernels import attention_kernels
from .noise import perturb_texts
from .options import CHECKPOINT_DIR, DISTILL_LOSSES, MAX_SEED, MIXED_PRECISIONS, OBJECTIVES, ConfigError
from .plots import plot_pretraining_losses
from .training import adamw, load_checkpoint, save_checkpoint

#: The MLM head classifies each masked code point into buckets of this many hash functions.
MLM_HASH_FUNCTIONS, MLM_HASH_BUCKETS = 2, 8192
LOG = "pretrain_log.jsonl"
LOSSES_PNG = "pretrain_losses.png"
SUMMARY = "pretraining.json"
CORPUS = "corpus.json"  # what the run reads, written at its start (a long run's record before its summary)


@dataclass
class PretrainConfig:
    output_dir: str
    objectives: tuple[str, ...] = OBJECTIVES
    max_steps: int = 2000
    max_minutes: float | None = None  # stop earlier when this much training time has passed
    batch_size: int = 32
    lr: float = 1e-3
    warmup_ratio: float = 0.05
    weight_decay: float = 0.01
    max_grad_norm: float = 1.0
    mask_rate: float = 0.15
    max_span: int = 3
    noise_rate: float = 0.5  # share of eligible words each attack changes in the noisy copy; 0: no noisy copy
    noise_attacks: tuple[str, ...] = ("charbert",)  # applied in turn to the noisy copy (entangle.noise)
    distill_loss: str = "cosine"  # one of DISTILL_LOSSES
    max_chars: int = 256  # texts are cut into windows of at most this many characters
    save_steps: int = 200
    log_steps: int = 25
    seed: int = 42
    mixed_precision: str = "no"  # Accelerate's: no, fp16 or bf16
    resume: bool = False
    command: str | None = None  # the command line, recorded in the summary

    def __post_init__(self):
        self.objectives = tuple(self.objectives)
        self.noise_attacks = tuple(self.noise_attacks)
        unknown = set(self.objectives) - set(OBJECTIVES)
        if not self.objectives or unknown:
            raise ValueError(f"objectives must be some of {', '.join(OBJECTIVES)}, got {', '.join(self.objectives)}")
        if self.mixed_precision not in MIXED_PRECISIONS:
            raise ConfigError(f"mixed_precision must be one of {', '.join(MIXED_PRECISIONS)}, got {self.mixed_precision!r}")
        if self.distill_loss not in DISTILL_LOSSES:
            raise ValueError(f"distill_loss must be one of {', '.join(DISTILL_LOSSES)}, got {self.distill_loss!r}")
        if not 0.0 < self.mask_rate < 1.0:
            raise ConfigError(f"--mask-rate must be in (0, 1), got {self.mask_rate}")
        if not 0.0 <= self.warmup_ratio < 1.0:  # the decay after the warm-up needs some of the budget
            raise ConfigError(f"warmup_ratio must be in [0, 1), got {self.warmup_ratio}")
        for name in ("max_steps", "batch_size", "save_steps", "log_steps", "max_chars"):
            if getattr(self, name) < 1:
                raise ConfigError(f"--{name.replace('_', '-')} must be at least 1, got {getattr(self, name)}")
        if not 0 <= self.seed <= MAX_SEED:  # set_seed's range
            raise ConfigError(f"--seed must be between 0 and 2**32 - 1, got {self.seed}")


# ---------------------------------------------------------------------------------- examples
@dataclass
class Example:
    """One window of a text; spans are ``[start, end)`` of the words the window owns."""

    char_ids: list[int]
    char_spans: list[tuple[int, int]]
    subword_ids: list[int] = field(default_factory=list)
    subword_spans: list[tuple[int, int]] = field(default_factory=list)
    noisy_char_ids: list[int] = field(default_factory=list)
    noisy_char_spans: list[tuple[int, int]] = field(default_factory=list)
    subword_char_starts: list[int] = field(default_factory=list)  # each subword's first and last character
    subword_char_ends: list[int] = field(default_factory=list)

    @property
    def length(self) -> int:
        return len(self.char_ids)


def _char_spans(ids: list[int], starts: list[int], owned: range) -> list[tuple[int, int]]:
    ends = [s - 1 for s in starts[1:]] + [len(ids) - 1]  # before the space / the end marker
    return [(starts[j], ends[j]) for j in owned]


def build_examples(texts: list[list[str]], max_chars: int, tokenizer: PreTrainedTokenizerBase | None = None,
                   max_subwords: int | None = None, noise_rate: float = 0.0, seed: int = 0,
                   noise_attacks: tuple[str, ...] = ("charbert",), subword_char_spans: bool = False) -> list[Example]:
    """Windows of every text with word spans on the character side (clean and, with
    ``noise_rate``, a copy with each of ``noise_attacks`` applied in turn) and, with a teacher
    ``tokenizer``, on the subword side (and with ``subword_char_spans`` each subword's characters,
    which the co-attention's alignment bias reads)."""
    featurizer = Featurizer(tokenizer, max_chars, max_subwords if tokenizer is not None else None,
                            subword_char_spans=subword_char_spans)
    noisy = perturb_texts(texts, noise_attacks, noise_rate, seed) if noise_rate > 0 else None
    examples = []
    for window in featurizer.featurize(texts):
        owned = range(window.own_start - window.start, window.own_end - window.start)
        example = Example(window.char_ids, _char_spans(window.char_ids, window.char_word_starts, owned))
        if tokenizer is not None:
            spans = featurizer.subword_word_spans(window)
            example.subword_ids = window.subword_ids
            example.subword_spans = [spans[j] for j in owned]
            example.subword_char_starts, example.subword_char_ends = window.subword_char_starts, window.subword_char_ends
        if noisy is not None:
            words = [code_points(w, featurizer.char_budget) for w in noisy[window.sentence][window.start : window.end]]
            ids, starts = char_window(words)
            if len(ids) > max_chars:  # insertions past the limit: each word cut to its clean length, which fits
                clean = _char_spans(window.char_ids, window.char_word_starts, range(len(words)))
                ids, starts = char_window([w[: end - start] for w, (start, end) in zip(words, clean)])
            example.noisy_char_ids, example.noisy_char_spans = ids, _char_spans(ids, starts, owned)
        examples.append(example)
    return examples


def _spans(rows: list[list[tuple[int, int]]]) -> tuple[torch.Tensor, torch.Tensor]:
    """(batch, words, 2) spans padded with empty spans, and (batch, words) which are real."""
    width = max(len(r) for r in rows)
    spans = torch.tensor([list(r) + [(0, 0)] * (width - len(r)) for r in rows]).reshape(len(rows), width, 2)
    return spans, spans[..., 1] > spans[..., 0]


class PretrainCollator:
    def __init__(self, subword_pad_id: int | None):
        self.subword_pad_id = subword_padding(subword_pad_id)

    def __call__(self, examples: list[Example]) -> dict[str, torch.Tensor]:
        batch = {"char_ids": pad_rows([e.char_ids for e in examples], CHAR_PAD)}
        batch["char_spans"], batch["word_mask"] = _spans([e.char_spans for e in examples])
        if examples[0].subword_ids:
            batch["subword_ids"] = pad_rows([e.subword_ids for e in examples], self.subword_pad_id)
            batch["subword_mask"] = pad_rows([[1] * len(e.subword_ids) for e in examples], 0)
            batch["subword_spans"], _ = _spans([e.subword_spans for e in examples])
        if examples[0].subword_char_starts:  # padding subwords are masked out of the alignment
            batch["subword_char_starts"] = pad_rows([e.subword_char_starts for e in examples], 0)
            batch["subword_char_ends"] = pad_rows([e.subword_char_ends for e in examples], 0)
        if examples[0].noisy_char_ids:
            batch["noisy_char_ids"] = pad_rows([e.noisy_char_ids for e in examples], CHAR_PAD)
            batch["noisy_char_spans"], _ = _spans([e.noisy_char_spans for e in examples])
        return batch


# ---------------------------------------------------------------------------------- objectives
def mask_spans(char_ids: torch.Tensor, rate: float, max_span: int, generator: torch.Generator
               ) -> tuple[torch.Tensor, torch.Tensor]:
    """Masked inputs and which positions were masked. Spans start at random real characters
    (never the start/end markers or padding) with lengths uniform in 1..``max_span``, each
    character starting one with probability ``rate`` over the mean length: overlapping spans and
    spans cut at a window's end leave a little less than ``rate`` masked (more so for longer spans)."""
    maskable = (char_ids != CHAR_PAD) & (char_ids != CHAR_CLS) & (char_ids != CHAR_SEP)
    n = char_ids.shape[1]
    mean_span = (1 + max_span) / 2
    starts = (torch.rand(char_ids.shape, generator=generator) < rate / mean_span) & maskable
    lengths = torch.randint(1, max_span + 1, char_ids.shape, generator=generator)
    masked = torch.zeros_like(maskable)
    for k in range(max_span):
        masked[:, k:] |= (starts & (lengths > k))[:, : n - k]
    masked &= maskable
    if not masked.any():  # a batch of very short texts: mask one character so the loss exists
        rows, cols = maskable.nonzero(as_tuple=True)
        pick = torch.randint(len(rows), (1,), generator=generator)
        masked[rows[pick], cols[pick]] = True
    how = torch.rand(char_ids.shape, generator=generator)
    real = char_ids[maskable]
    random_chars = real[torch.randint(len(real), char_ids.shape, generator=generator)]
    return replace_masked(char_ids, masked, how, CHAR_MASK, random_chars), masked


def replace_masked(ids: torch.Tensor, masked: torch.Tensor, how: torch.Tensor, mask_id: int,
                   random_ids: torch.Tensor) -> torch.Tensor:
    """BERT's 80/10/10 on the ``masked`` positions, by the draw ``how`` in [0, 1) at each: below
    0.8 the mask symbol, below 0.9 the random symbol at that position, else the symbol kept."""
    inputs = ids.clone()
    inputs[masked & (how < 0.8)] = mask_id
    swap = masked & (how >= 0.8) & (how < 0.9)
    inputs[swap] = random_ids[swap]
    return inputs


class CharMLMHead(nn.Module):
    """State -> dense -> GELU -> LayerNorm -> one bucket classifier per hash function."""

    def __init__(self, width: int):
        super().__init__()
        self.transform = nn.Sequential(nn.Linear(width, width), nn.GELU(), nn.LayerNorm(width))
        self.decoders = nn.ModuleList(nn.Linear(width, MLM_HASH_BUCKETS) for _ in range(MLM_HASH_FUNCTIONS))

    def forward(self, states: torch.Tensor, targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Mean cross-entropy over hash functions, and the share of code points with every bucket right."""
        hidden = self.transform(states)
        losses, right = [], torch.ones_like(targets, dtype=torch.bool)
        for k, decoder in enumerate(self.decoders):
            logits = decoder(hidden)
            buckets = hash_code_points(targets, k, MLM_HASH_BUCKETS)
            losses.append(F.cross_entropy(logits, buckets))
            right &= logits.argmax(-1) == buckets
        return torch.stack(losses).mean(), right.float().mean()


def pool_spans(states: torch.Tensor, spans: torch.Tensor) -> torch.Tensor:
    """Mean state over each span: (batch, length, width), (batch, words, 2) -> (batch, words, width)."""
    positions = torch.arange(states.shape[1], device=states.device)
    inside = (positions >= spans[..., :1]) & (positions < spans[..., 1:])  # (batch, words, length)
    weights = inside.to(states.dtype)
    return weights @ states / weights.sum(-1, keepdim=True).clamp(min=1)


class CharPretrainingModel(nn.Module):
    """The character encoder with the heads of its objectives (the heads are dropped at the end)."""

    def __init__(self, encoder: PreTrainedModel, objectives: tuple[str, ...], teacher_width: int | None,
                 distill_loss: str = "cosine"):
        super().__init__()
        self.encoder = encoder
        width = encoder.config.hidden_size
        self.mlm_head = CharMLMHead(width) if "mlm" in objectives else None
        self.projection = nn.Linear(width, teacher_width) if "distill" in objectives else None
        self.distill_loss = distill_loss

    def encode(self, char_ids: torch.Tensor) -> torch.Tensor:
        return encode_chars(self.encoder, char_ids, (char_ids != CHAR_PAD).long())

    def distill(self, char_ids: torch.Tensor, spans: torch.Tensor, word_mask: torch.Tensor,
                teacher_words: torch.Tensor) -> torch.Tensor:
        # In float32: CPU autocast leaves a cosine of two bfloat16 tensors in bfloat16.
        student = self.projection(pool_spans(self.encode(char_ids), spans))[word_mask].float()
        teacher = teacher_words[word_mask].float()
        if self.distill_loss == "centered":
            teacher = teacher - teacher.mean(0)
        if self.distill_loss in ("cosine", "centered"):
            return (1 - F.cosine_similarity(student, teacher, dim=-1)).mean()
        return F.mse_loss(student, teacher)

    def forward(self, batch: dict[str, torch.Tensor], mlm_inputs: torch.Tensor | None = None,
                mlm_masked: torch.Tensor | None = None, teacher_words: torch.Tensor | None = None
                ) -> dict[str, torch.Tensor]:
        """Every objective's loss (and MLM's accuracy) for one batch, in one call: the loop calls
        the model as Accelerate prepared it, so DDP averages the gradients and mixed precision applies."""
        out = {}
        if mlm_inputs is not None:
            out["mlm_loss"], out["mlm_accuracy"] = self.mlm_head(self.encode(mlm_inputs)[mlm_masked],
                                                                 batch["char_ids"][mlm_masked])
        if teacher_words is not None:
            out["distill_loss"] = self.distill(batch["char_ids"], batch["char_spans"], batch["word_mask"],
                                               teacher_words)
            if "noisy_char_ids" in batch:  # held to the clean text's teacher states
                out["distill_noisy_loss"] = self.distill(batch["noisy_char_ids"], batch["noisy_char_spans"],
                                                         batch["word_mask"], teacher_words)
        return out


# ---------------------------------------------------------------------------------- the loop
class PretrainState:
    """Where the loop is, beyond Accelerate's own checkpoint: enough to continue exactly."""

    _FIELDS = ("epoch", "batches_done", "step", "elapsed", "log_lines", "sums", "counts")

    def __init__(self, generator: torch.Generator, mask_generator: torch.Generator):
        self.generator, self.mask_generator = generator, mask_generator
        self.epoch, self.batches_done, self.step, self.elapsed, self.log_lines = 1, 0, 0, 0.0, 0
        self.sums: dict[str, float] = {}  # loss sums since the last log line
        self.counts: dict[str, int] = {}
        self.epoch_generator_state = generator.get_state()

    def add(self, name: str, value: float) -> None:
        self.sums[name] = self.sums.get(name, 0.0) + value
        self.counts[name] = self.counts.get(name, 0) + 1

    def state_dict(self) -> dict:
        return {**{name: getattr(self, name) for name in self._FIELDS},
                "epoch_generator_state": self.epoch_generator_state,
                "mask_generator_state": self.mask_generator.get_state()}

    def load_state_dict(self, state: dict) -> None:
        for name in self._FIELDS:
            setattr(self, name, state[name])
        self.epoch_generator_state = state["epoch_generator_state"]
        self.mask_generator.set_state(state["mask_generator_state"])


def pretrain_char(encoder: PreTrainedModel, corpus: RawCorpus, config: PretrainConfig,
                  teacher: PreTrainedModel | None = None, tokenizer: PreTrainedTokenizerBase | None = None) -> dict:
    """Pretrain ``encoder`` in place on ``corpus``; save it to ``config.output_dir``; return the summary."""
    distill = "distill" in config.objectives
    if distill and (teacher is None or tokenizer is None):
        raise ValueError("the distill objective needs a teacher subword encoder and its tokenizer")
    set_seed(config.seed)  # before the heads are built: --seed fixes their initialisation
    examples = build_examples(  # windows the encoder's position table holds (a CANINE's may be small)
        corpus.texts, min(config.max_chars, char_window_limit(encoder.config)), tokenizer if distill else None,
        subword_window_limit(teacher.config, tokenizer) if distill else None,
        config.noise_rate if distill else 0.0, config.seed, config.noise_attacks,
    )
    model = CharPretrainingModel(encoder, config.objectives, teacher.config.hidden_size if distill else None,
                                 config.distill_loss)

    def step_outputs(model: nn.Module, batch: dict, state: PretrainState, device: torch.device) -> dict:
        inputs = {}
        if "mlm" in config.objectives:
            masked_inputs, masked = mask_spans(batch["char_ids"].cpu(), config.mask_rate, config.max_span,
                                               state.mask_generator)
            inputs.update(mlm_inputs=masked_inputs.to(device), mlm_masked=masked.to(device))
        if distill:
            with torch.no_grad():
                states = teacher(input_ids=batch["subword_ids"], attention_mask=batch["subword_mask"]).last_hidden_state
                inputs["teacher_words"] = pool_spans(states, batch["subword_spans"])
        return model(batch, **inputs)

    frozen = [teacher] if distill else []
    return run_pretraining(model, examples, PretrainCollator(tokenizer.pad_token_id if distill else None), corpus,
                           config, step_outputs, lambda model, output: model.encoder.save_pretrained(output), frozen,
                           {"teacher": getattr(teacher, "name_or_path", None) if distill else None})


def run_pretraining(model: nn.Module, examples: list[Example], collator: PretrainCollator, corpus: RawCorpus,
                    config: PretrainConfig, step_outputs, save, frozen: list[nn.Module] = (), about: dict | None = None
                    ) -> dict:
    """The loop every pretraining objective shares: train ``model``'s trainable parameters on
    ``examples`` with ``step_outputs(model, batch, state, device)``, which calls ``model`` (as
    Accelerate prepared it) once and returns its outputs by name: the step's loss is the sum of
    those ending in ``_loss``, and every output is logged; ``save(model, output)`` writes what the
    output directory holds, at every checkpoint and at the end; ``frozen`` models are moved to the
    device beside it. The summary, with ``about`` added, is returned and written. The caller seeds
    (``set_seed``) before it builds ``model``'s new layers."""
    output = Path(config.output_dir)
    output.mkdir(parents=True, exist_ok=True)
    # Under DDP, parameters no objective reaches (a CANINE's pooler) get no gradient: DDP must be told.
    accelerator = Accelerator(mixed_precision=config.mixed_precision,
                              kwargs_handlers=[DistributedDataParallelKwargs(find_unused_parameters=True)])
    if accelerator.is_main_process:
        (output / CORPUS).write_text(json.dumps({"sources": [asdict(s) for s in corpus.sources],
                                                 "windows": len(examples)}, indent=2))
    generator = torch.Generator().manual_seed(config.seed)
    mask_generator = torch.Generator().manual_seed(config.seed + 1)
    loader = train_loader(examples, config.batch_size, collator, generator)
    trainable = [p for p in model.parameters() if p.requires_grad]
    decay = [p for p in trainable if p.ndim >= 2]
    no_decay = [p for p in trainable if p.ndim < 2]
    optimizer = adamw([{"params": decay, "weight_decay": config.weight_decay},
                       {"params": no_decay, "weight_decay": 0.0}], lr=config.lr)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for other in frozen:
        other.to(accelerator.device).eval().requires_grad_(False)
    state = PretrainState(generator, mask_generator)
    accelerator.register_for_checkpointing(state)
    if config.resume:
        load_checkpoint(accelerator, output / CHECKPOINT_DIR)
    log_path = output / LOG
    kept = log_path.read_text().splitlines()[: state.log_lines] if config.resume and log_path.exists() else []
    if accelerator.is_main_process:
        log_path.write_text("".join(line + "\n" for line in kept))
    started = time.perf_counter()

    def elapsed() -> float:
        return state.elapsed + time.perf_counter() - started

    def checkpoint() -> None:
        nonlocal started
        state.elapsed, started = elapsed(), time.perf_counter()
        save_checkpoint(accelerator, output / CHECKPOINT_DIR)
        if accelerator.is_main_process:  # the directory is usable at every checkpoint, not only at the end
            save(accelerator.unwrap_model(model), output)

    def budget_spent() -> float:
        """Training time so far; under several processes with a time budget, the longest process's,
        so that every process takes the same rate and stops at the same step (one stopping alone
        would leave the others waiting in a step's gradient exchange)."""
        spent = elapsed()
        if config.max_minutes is not None and accelerator.num_processes > 1:
            spent = accelerator.reduce(torch.tensor(spent, dtype=torch.float64, device=accelerator.device), "max").item()
        return spent

    def progress_share() -> float:
        """How much of the budget is spent: steps, or time when that runs out first."""
        share = state.step / config.max_steps  # as Hugging Face's linear schedule: the last step is not at 0
        return max(share, budget_spent() / (60 * config.max_minutes)) if config.max_minutes else share

    def out_of_time() -> bool:
        return config.max_minutes is not None and budget_spent() >= 60 * config.max_minutes

    def set_learning_rate() -> float:
        # Linear warm-up, then linear decay to 0 at the end of the budget, so a run bounded by
        # time gets a whole schedule too (it is then as reproducible as the clock).
        share, warmup = min(progress_share(), 1.0), config.warmup_ratio
        factor = share / warmup if share < warmup else (1 - share) / (1 - warmup)
        for group in optimizer.param_groups:
            group["lr"] = config.lr * max(factor, 0.0)
        return group["lr"]

    progress = tqdm(total=config.max_steps, initial=state.step, desc="pretraining",
                    disable=not accelerator.is_local_main_process, mininterval=0.1 if sys.stderr.isatty() else 30)
    model.train()
    while state.step < config.max_steps and not out_of_time():
        if state.batches_done == 0:
            state.epoch_generator_state = generator.get_state()
            batches = loader
        else:  # resuming mid-epoch: the same batch order, minus what was already trained on
            generator.set_state(state.epoch_generator_state)
            batches = accelerator.skip_first_batches(loader, state.batches_done)
        for batch in batches:
            with attention_kernels(accelerator.device):
                with accelerator.autocast():  # the frozen models' forward too
                    outputs = step_outputs(model, batch, state, accelerator.device)
                for name, value in outputs.items():
                    state.add(name, value.item())
                accelerator.backward(sum(value for name, value in outputs.items() if name.endswith("_loss")))
            accelerator.clip_grad_norm_(trainable, config.max_grad_norm)
            lr = set_learning_rate()
            optimizer.step()
            optimizer.zero_grad()
            state.batches_done += 1
            state.step += 1
            progress.update(1)
            last = state.step >= config.max_steps or out_of_time()
            if state.step % config.log_steps == 0 or last:  # the last, partial interval is logged too
                record = {"step": state.step, "epoch": state.epoch, "elapsed_s": round(elapsed(), 1),
                          "lr": lr,
                          **{k: state.sums[k] / state.counts[k] for k in sorted(state.sums)}}
                state.sums, state.counts = {}, {}
                if accelerator.is_main_process:
                    with open(log_path, "a") as log:
                        log.write(json.dumps(record) + "\n")
                state.log_lines += 1
                progress.set_postfix({k: f"{v:.3f}" for k, v in record.items() if k.endswith("loss")})
            if state.step % config.save_steps == 0:
                checkpoint()
            if last:
                break
        else:
            state.epoch += 1
            state.batches_done = 0
    progress.close()
    checkpoint()
    if not accelerator.is_main_process:
        return {}
    records = [json.loads(line) for line in log_path.read_text().splitlines()]
    if records:
        plot_pretraining_losses(records, output / LOSSES_PNG)
    summary = {
        "steps": state.step, "processes": accelerator.num_processes,
        "epochs": round(state.step * config.batch_size * accelerator.num_processes / len(examples), 2),
        "pretrain_time_s": round(state.elapsed, 1), "windows": len(examples), "corpus": [asdict(s) for s in corpus.sources],
        "first_log": records[0] if records else None, "last_log": records[-1] if records else None,
        **(about or {}), "config": asdict(config),
    }
    (output / SUMMARY).write_text(json.dumps(summary, indent=2))
    return summary
