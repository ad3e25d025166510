"""The vocabulary of the options: the choices and defaults that the command line, the model
configuration and the pretraining share, and the errors an option can raise. Importable without
torch or transformers, so ``entangle --help`` and option errors come at once."""

from __future__ import annotations

import json
from pathlib import Path

SIDES = ("subword", "char", "both")
#: How characters and subwords are joined: the entanglement model's co-attention, or CharBERT's
#: character channel through the subword encoder's own layers (``modeling/charbert.py``).
FUSIONS = ("coattention", "charbert")
#: The built-in character encoder (a BiLSTM, ``modeling/char_encoder.py``) from scratch, and its
#: config's ``model_type``.
BUILTIN_CHAR = "builtin"
BUILTIN_CHAR_MODEL_TYPE = "entangle-char"
#: The built-in character encoder pretrained with ``entangle pretrain-char`` and shipped inside the
#: package: name -> directory (its README.md is the model card: data, steps, time, losses, licence).
_WEIGHTS = Path(__file__).resolve().parent / "weights"
SHIPPED_CHAR = {"builtin-en": _WEIGHTS / "char-en", "builtin-en-2layer": _WEIGHTS / "char-en-2layer"}
#: The encoders used unless told: the shipped pretrained character encoder, which the head reading
#: both sides turns into a gain over MiniLM alone (WNUT-17, benchmarks/RESULTS.md), and offline
#: MiniLM (``entangle.modeling.encoders`` resolves the names).
DEFAULT_CHAR = "builtin-en"
DEFAULT_SUBWORD = "minilm"
#: The hub names of the subword encoders that load offline under a short name (a model card's
#: ``base_model`` names the model a hub knows).
HUB_NAMES = {"minilm": "sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2": "sentence-transformers/all-MiniLM-L6-v2",
             "multilingual-e5-small": "intfloat/multilingual-e5-small", "me5-small": "intfloat/multilingual-e5-small"}
#: Accelerate's mixed-precision modes, for training and pretraining.
MIXED_PRECISIONS = ("no", "fp16", "bf16")
#: Co-attention modules per side (the paper's m) of a model with co-attention, unless told.
DEFAULT_COATTENTION_LAYERS = 2
#: Config fields that fix the shape and meaning of what ``train --coattention-init`` takes from a
#: pretrained base model (projections, co-attention, downsampling): the two models must agree on
#: all of them. ``pretrain-coattention`` takes the model options behind them (``schema``).
PRETRAINED_SHAPE = ("num_coattention_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                    "char_downsample", "alignment_bias", "char_encoder_name", "char_encoder_pretrained",
                    "subword_encoder_name")
#: Pretraining objectives of the character encoder (``entangle.pretraining``).
OBJECTIVES = ("mlm", "distill")
#: How `pretrain-char` compares a word's projected character state with the teacher's (entangle.pretraining).
DISTILL_LOSSES = ("cosine", "centered", "mse")
#: The graph of an exported model (``entangle.onnx_model``).
GRAPH = "model.onnx"
#: The options a run was started with, kept in its output directory for --resume (and what marks
#: a training output directory).
RUN_ARGS = "run_args.json"
#: The largest seed: torch and numpy take 0 to 2**32 - 1 (``accelerate.utils.set_seed``).
MAX_SEED = 2**32 - 1
#: Where a training or pretraining run keeps what --resume continues from.
CHECKPOINT_DIR = "checkpoint"


class ConfigError(ValueError):
    """A model configuration whose options contradict each other; the message says which."""


class UsageError(ValueError):
    """Options that miss something or do not fit together; the message says what."""


class ModelLoadError(ValueError):
    """A model or encoder that cannot be loaded; the message names the path or file and says why."""


class ExportError(ValueError):
    """A model that cannot be exported to ONNX (its kind, or code that fixes a length); the message says why."""


class DivergedError(RuntimeError):
    """A training whose weights became NaN or infinite; the message says when, and what was kept."""


class MissingExtraError(ImportError):
    """An optional extra (offline, multilingual, onnx, plots) is not installed; the message names the pip command."""


def isolate_sides_by_default(side: str, num_coattention_layers: int) -> bool:
    """Whether a model isolates its sides unless told: whenever both heads train through co-attention,
    because the summed loss lets the character head pull the subword side below the subword encoder
    alone (WNUT-17, benchmarks/RESULTS.md)."""
    return side == "both" and num_coattention_layers > 0


def trained_sides(side: str, joint_head: bool) -> tuple[str, ...]:
    """The heads a model trains and is scored on: each side's, and ``joint`` with a joint head."""
    return (("subword", "char") if side == "both" else (side,)) + (("joint",) if joint_head else ())


#: The built-in character encoder's learning rate unless told (and unless ``--new-lr`` is).
BUILTIN_CHAR_LR = 5e-4


def default_char_lr(builtin: bool, pretrained: bool, lr: float, new_lr: float | None) -> float:
    """The character encoder's learning rate unless told: a pretrained transformer (CANINE) fine-tunes
    at ``lr`` like the subword encoder; the built-in BiLSTM learns at a rate for new layers even when
    pretrained, being small and briefly pretrained (WNUT-17, m=2, joint head: 5e-4 gave the character
    side 31.52 F1 where 5e-5 gave 26.18, benchmarks/RESULTS.md): ``new_lr`` when one is given,
    else ``BUILTIN_CHAR_LR``, whatever the task's rate for the other new parts."""
    if pretrained and not builtin:
        return lr
    return BUILTIN_CHAR_LR if new_lr is None else new_lr


def char_encoder_kind(char: str) -> tuple[bool, bool]:
    """Whether the ``--char`` option names the built-in encoder, and whether a pretrained one, told
    from the name alone (a local config is read, nothing is loaded), so that ``entangle train``
    records the rate of :func:`default_char_lr` before any model exists and the library picks the
    same. A hub name (or a path not there) is taken for a pretrained transformer."""
    if char == BUILTIN_CHAR:
        return True, False
    if char in SHIPPED_CHAR:
        return True, True
    path = Path(char).expanduser()
    config = path / "config.json" if path.is_dir() else path
    try:
        model_type = json.loads(config.read_text(encoding="utf-8")).get("model_type")
    except (OSError, ValueError, AttributeError):  # a hub name, or a file that loading will name
        model_type = None
    return model_type == BUILTIN_CHAR_MODEL_TYPE, path.is_dir() or not char.endswith(".json")


def file_in_the_way(path: str | Path) -> Path | None:
    """The file at ``path`` or above it, if there is one: no directory can be made there (found
    before a command's work, not when its output is written)."""
    path = Path(path)
    nearest = next((p for p in (path, *path.parents) if p.exists()), None)
    return nearest if nearest is not None and not nearest.is_dir() else None


def read_record(path: Path, writer: str) -> dict:
    """A JSON object that ``writer`` wrote (a run's options, a result); a damaged one (a merge's
    conflict markers, a cut copy) is a :class:`UsageError` naming the file, not a traceback."""
    try:
        record = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise UsageError(f"{path}: not the JSON {writer} wrote ({err})") from None
    if not isinstance(record, dict):
        raise UsageError(f"{path}: not the JSON {writer} wrote (expected an object)")
    return record


def is_onnx_dir(path: str | Path) -> bool:
    return (Path(path) / GRAPH).is_file()
