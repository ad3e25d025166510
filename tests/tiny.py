"""Tiny random encoders and tokenizers of each family users bring, built on the fly (no downloads);
the tokenizers are trained once and kept in ``tests/tokenizers`` (see ``_frozen``)."""

from __future__ import annotations

import functools
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers
from transformers import (
    BertConfig,
    BertModel,
    CanineConfig,
    CanineModel,
    PreTrainedTokenizerFast,
    RobertaConfig,
    RobertaModel,
    XLMRobertaConfig,
    XLMRobertaModel,
)

from entangle.modeling import CharEncoderConfig, CharEncoderModel
from entangle.predict import model_class

CORPUS = [
    "The quick brown fox jumps over the lazy dog .",
    "Empire State Building is in New York City",
    "@paulwalk it's the view from where I'm living for two weeks",
    "Naïve café owners in São Paulo love crème brûlée",
    "lol sooo gooood #blessed http://t.co/abc",
    "Москва and 東京 are big cities ; مرحبا بالعالم",
] * 5
WIDTH = 32
LABELS = ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]


def _train_wordpiece() -> Tokenizer:
    """BERT-style: lower-casing and accent-stripping normaliser, WordPiece with ``##`` continuations."""
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tokenizer = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tokenizer.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
    tokenizer.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tokenizer.train_from_iterator(CORPUS, trainers.WordPieceTrainer(vocab_size=200, special_tokens=special))
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", tokenizer.token_to_id("[CLS]")), ("[SEP]", tokenizer.token_to_id("[SEP]"))]
    )
    tokenizer.decoder = decoders.WordPiece()
    return tokenizer


def _train_bytelevel_bpe() -> Tokenizer:
    """RoBERTa-style: byte-level BPE, a word's leading space is part of its first token (``Ġ``)."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.train_from_iterator(CORPUS, trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<s>", "<pad>", "</s>", "<unk>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet()
    ))
    tokenizer.post_processor = processors.RobertaProcessing(("</s>", 2), ("<s>", 0), trim_offsets=True)
    return tokenizer


def _train_unigram() -> Tokenizer:
    """XLM-R-style: SentencePiece Unigram with the ``▁`` word-start marker."""
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace()
    tokenizer.decoder = decoders.Metaspace()
    tokenizer.train_from_iterator(CORPUS, trainers.UnigramTrainer(
        vocab_size=150, special_tokens=["<s>", "<pad>", "</s>", "<unk>"], unk_token="<unk>"
    ))
    tokenizer.post_processor = processors.TemplateProcessing(single="<s> $A </s>", special_tokens=[("<s>", 0), ("</s>", 2)])
    return tokenizer


_TRAIN = {"wordpiece": _train_wordpiece, "bytelevel_bpe": _train_bytelevel_bpe, "unigram": _train_unigram}
_FROZEN = Path(__file__).parent / "tokenizers"


def _frozen(name: str) -> Tokenizer:
    """The tokenizer ``_TRAIN[name]`` once made, read from ``tests/tokenizers``. The Rust trainers
    break frequency ties in hash order, which differs from process to process (two runs gave
    WordPiece vocabularies differing in 77 of 200 ids), so training on the fly gave every test
    run different tiny models. ``python tests/tiny.py`` trains and writes them again."""
    return Tokenizer.from_file(str(_FROZEN / f"{name}.json"))


@functools.cache
def wordpiece_tokenizer() -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=_frozen("wordpiece"), unk_token="[UNK]", pad_token="[PAD]",
                                   cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


@functools.cache
def bytelevel_bpe_tokenizer() -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=_frozen("bytelevel_bpe"), bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>", cls_token="<s>", sep_token="</s>")


@functools.cache
def unigram_tokenizer() -> PreTrainedTokenizerFast:
    return PreTrainedTokenizerFast(tokenizer_object=_frozen("unigram"), bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>", pad_token="<pad>", cls_token="<s>", sep_token="</s>")


_ENCODER_KWARGS = dict(hidden_size=WIDTH, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37)


def subword_encoder(family: str):
    """A tiny random encoder and its tokenizer: ``bert``, ``roberta`` or ``xlmr``."""
    if family == "bert":
        tokenizer = wordpiece_tokenizer()
        config = BertConfig(vocab_size=len(tokenizer), max_position_embeddings=64, **_ENCODER_KWARGS)
        return BertModel(config), tokenizer
    if family == "roberta":
        tokenizer = bytelevel_bpe_tokenizer()
        config = RobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=66, pad_token_id=1, **_ENCODER_KWARGS)
        return RobertaModel(config), tokenizer
    if family == "xlmr":
        tokenizer = unigram_tokenizer()
        config = XLMRobertaConfig(vocab_size=len(tokenizer), max_position_embeddings=66, pad_token_id=1, **_ENCODER_KWARGS)
        return XLMRobertaModel(config), tokenizer
    raise ValueError(family)


def char_encoder(kind: str = "builtin"):
    if kind == "builtin":
        return CharEncoderModel(CharEncoderConfig(hidden_size=16, embedding_size=8, num_hash_buckets=64))
    if kind == "canine":
        return CanineModel(CanineConfig(hidden_size=WIDTH, num_hidden_layers=1, num_attention_heads=2,
                                        intermediate_size=37, num_hash_functions=2, num_hash_buckets=64,
                                        local_transformer_stride=8, max_position_embeddings=512))
    raise ValueError(kind)


def tiny_model(m: int = 1, side: str = "both", family: str = "bert", char: str = "builtin", labels=LABELS,
               task: str = "ner", **config):
    """An entanglement model on tiny random encoders; the character side (width 16) is projected to 32."""
    subword, tokenizer = subword_encoder(family)
    config.setdefault("hidden_dropout_prob", 0.0)
    model, tokenizer = model_class(task).from_encoders(
        char_encoder(char), subword, labels, tokenizer=tokenizer, num_coattention_layers=m, side=side, task=task,
        num_attention_heads=2, intermediate_size=48, **config,
    )
    return model.eval(), tokenizer


def charbert_model(family: str = "bert", **config):
    """A CharBERT-style tagger on a tiny random encoder (no character encoder is built)."""
    subword, tokenizer = subword_encoder(family)
    config.setdefault("hidden_dropout_prob", 0.0)
    model, tokenizer = model_class("ner").from_encoders(
        None, subword, LABELS, tokenizer=tokenizer, num_coattention_layers=0, side="subword", fusion="charbert",
        char_embedding_size=16, char_hash_buckets=64, **config,
    )
    return model.eval(), tokenizer


if __name__ == "__main__":  # python tests/tiny.py: train the tiny tokenizers again and keep them
    _FROZEN.mkdir(exist_ok=True)
    for name, train in _TRAIN.items():
        train().save(str(_FROZEN / f"{name}.json"), pretty=True)
