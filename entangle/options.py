"""The vocabulary of the options: the choices and defaults that the command line, the model
configuration and the pretraining share, and the errors an option can raise. Importable without
torch or transformers, so ``entangle --help`` and option errors come at once."""

from __future__ import annotations

from pathlib import Path

SIDES = ("subword", "char", "both")
#: How characters and subwords are joined: the entanglement model's co-attention, or CharBERT's
#: character channel through the subword encoder's own layers (``modeling/charbert.py``).
FUSIONS = ("coattention", "charbert")
#: The encoders used unless told: the built-in character encoder (from scratch) and offline MiniLM
#: (``entangle.modeling.encoders`` resolves the names).
BUILTIN_CHAR = "builtin"
DEFAULT_CHAR = BUILTIN_CHAR
DEFAULT_SUBWORD = "minilm"
#: Co-attention modules per side (the paper's m) of a model with co-attention, unless told.
DEFAULT_COATTENTION_LAYERS = 2
#: Config fields that fix the shape and meaning of what ``train --coattention-init`` takes from a
#: pretrained base model (projections, co-attention, downsampling): the two models must agree on
#: all of them. ``pretrain-coattention`` takes the model options behind them (``schema``).
PRETRAINED_SHAPE = ("num_coattention_layers", "hidden_size", "num_attention_heads", "intermediate_size",
                    "char_downsample", "char_encoder_name", "char_encoder_pretrained", "subword_encoder_name")
#: Pretraining objectives of the character encoder (``entangle.pretraining``).
OBJECTIVES = ("mlm", "distill")
#: The graph of an exported model (``entangle.onnx_model``).
GRAPH = "model.onnx"


class ConfigError(ValueError):
    """A model configuration whose options contradict each other; the message says which."""


class UsageError(ValueError):
    """Options that miss something or do not fit together; the message says what."""


class ModelLoadError(ValueError):
    """A model or encoder that cannot be loaded; the message names the path or file and says why."""


class MissingExtraError(ImportError):
    """An optional extra (onnx, plots) is not installed; the message names the pip command."""


def isolate_sides_by_default(side: str, num_coattention_layers: int) -> bool:
    """Whether a model isolates its sides unless told: whenever both heads train through co-attention,
    because the summed loss lets the character head pull the subword side below the subword encoder
    alone (WNUT-17, benchmarks/RESULTS.md)."""
    return side == "both" and num_coattention_layers > 0


def is_onnx_dir(path: str | Path) -> bool:
    return (Path(path) / GRAPH).is_file()
