"""Co-attention pretraining: whole words masked on both sides, fixed encoders, and fine-tuning
started from the result (--coattention-init)."""

from __future__ import annotations

import pytest
import torch
from tiny import CORPUS, tiny_model

from entangle.coattention_pretraining import mask_words, pretrain_coattention
from entangle.data.features import CHAR_CLS, CHAR_MASK, CHAR_PAD, CHAR_SEP
from entangle.data.raw_text import RawCorpus
from entangle.data.words import split_words
from entangle.options import ConfigError
from entangle.pretraining import PretrainCollator, PretrainConfig, build_examples


#: A tiny model co-attention pretraining accepts: its character encoder counts as pretrained, its sides read each other.
PRETRAINABLE = dict(char_encoder_pretrained=True, isolate_sides=False)


def corpus() -> RawCorpus:
    raw = RawCorpus()
    raw.add("tiny", [split_words(text) for text in CORPUS])
    return raw


def test_a_masked_word_is_masked_on_both_sides_and_nothing_else_is():
    _, tokenizer = tiny_model(m=1)
    texts = [["Peter", "lives", "in", "New", "York"], ["lol", "sooo", "good"]]
    batch = PretrainCollator(tokenizer.pad_token_id)(build_examples(texts, 64, tokenizer, 64))
    generator = torch.Generator().manual_seed(0)
    chars, char_masked, subwords, subword_masked = mask_words(batch, 0.5, generator, tokenizer.mask_token_id,
                                                               len(tokenizer))
    specials = torch.tensor([CHAR_CLS, CHAR_SEP, CHAR_PAD, ord(" ")])
    assert not torch.isin(batch["char_ids"][char_masked], specials).any()
    assert (chars[~char_masked] == batch["char_ids"][~char_masked]).all()
    assert (subwords[~subword_masked] == batch["subword_ids"][~subword_masked]).all()
    assert (chars[char_masked] == CHAR_MASK).float().mean() > 0.5
    for row in range(2):  # each word is masked on one side exactly when it is on the other
        for (c0, c1), (s0, s1), real in zip(batch["char_spans"][row], batch["subword_spans"][row], batch["word_mask"][row]):
            if real:
                assert char_masked[row, c0:c1].all() == subword_masked[row, s0:s1].all()
                assert char_masked[row, c0:c1].all() or not char_masked[row, c0:c1].any()
    assert char_masked.any()


def test_pretraining_trains_the_coattention_alone_and_train_starts_from_it(tmp_path):
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=1, alignment_bias=True, **PRETRAINABLE)  # the bias: as train builds by default
    base = model.entangle
    encoders = {k: v.clone() for k, v in base.subword_encoder.state_dict().items()}
    before = {k: v.clone() for k, v in base.coattention.state_dict().items()}
    config = PretrainConfig(output_dir=str(tmp_path / "pre"), objectives=("mlm",), max_steps=3, batch_size=4,
                            lr=1e-3, save_steps=10, log_steps=1)
    summary = pretrain_coattention(base, tokenizer, corpus(), config)
    assert summary["steps"] == 3 and summary["last_log"]["subword_mlm_loss"] > 0
    # Compared on the CPU: pretraining leaves the model on the GPU when there is one.
    assert all(torch.equal(v, base.subword_encoder.state_dict()[k].cpu()) for k, v in encoders.items())  # fixed
    assert any(not torch.equal(v, base.coattention.state_dict()[k].cpu()) for k, v in before.items())  # trained
    assert (tmp_path / "pre" / "model.safetensors").is_file()

    assert base.coattention.char_layers[0].cross.alignment_bias.ne(2.0).any()  # fed each subword's characters
    torch.manual_seed(0)  # the same encoders as the pretrained model's: another's would be refused
    started, _ = tiny_model(m=1, char_encoder_pretrained=True, alignment_bias=True,
                            coattention_init=str(tmp_path / "pre"))
    for key, value in base.coattention.state_dict().items():
        assert torch.equal(started.entangle.coattention.state_dict()[key], value.cpu())
    assert torch.equal(started.entangle.char_projection.weight, base.char_projection.weight.cpu())
    with pytest.raises(ConfigError, match="pretrained for another model .*num_coattention_layers 1 there, 2 here"):
        tiny_model(m=2, char_encoder_pretrained=True, alignment_bias=True, coattention_init=str(tmp_path / "pre"))
    with pytest.raises(ConfigError, match="char_encoder_pretrained True there, False here"):
        tiny_model(m=1, alignment_bias=True, coattention_init=str(tmp_path / "pre"))
    with pytest.raises(ConfigError, match="alignment_bias True there, False here"):
        tiny_model(m=1, char_encoder_pretrained=True, coattention_init=str(tmp_path / "pre"))
    with pytest.raises(ConfigError, match="pretrained on another character encoder"):  # other random encoders
        tiny_model(m=1, char_encoder_pretrained=True, alignment_bias=True, coattention_init=str(tmp_path / "pre"))


@pytest.mark.parametrize("options, error", [
    (dict(m=0, side="subword"), "no co-attention to pretrain"),
    (dict(m=1, isolate_sides=False), "is not pretrained: it stays fixed"),
    (dict(m=1, char_encoder_pretrained=True), "isolate_sides=False"),
    (dict(m=1, positional_alignment=True, **PRETRAINABLE), "positional alignment starts fresh at fine-tuning"),
], ids=["m0", "random-char-encoder", "isolated-sides", "positional-alignment"])
def test_what_cannot_be_pretrained_is_one_clear_error(options, error, tmp_path):
    model, tokenizer = tiny_model(**options)
    config = PretrainConfig(output_dir=str(tmp_path / "pre"), max_steps=1)
    with pytest.raises(ConfigError, match=error):
        pretrain_coattention(model.entangle, tokenizer, corpus(), config)


def test_a_trained_model_can_start_the_coattention_and_a_pretrain_char_output_cannot(tmp_path):
    model, _ = tiny_model(m=1, char_encoder_pretrained=True)
    model.save_pretrained(tmp_path / "trained")  # its base model's keys under "entangle."
    started, _ = tiny_model(m=1, char_encoder_pretrained=True, coattention_init=str(tmp_path / "trained"))
    assert torch.equal(started.entangle.coattention.char_layers[0].cross.query.weight,
                       model.entangle.coattention.char_layers[0].cross.query.weight)
    model.entangle.char_encoder.save_pretrained(tmp_path / "encoder")
    with pytest.raises(ConfigError, match="not of an entangle model"):
        tiny_model(m=1, char_encoder_pretrained=True, coattention_init=str(tmp_path / "encoder"))


def test_a_masked_word_is_hidden_the_same_way_on_both_sides():
    _, tokenizer = tiny_model(m=1)
    batch = PretrainCollator(tokenizer.pad_token_id)(build_examples([["Peter", "lives", "in", "New", "York"]] * 8,
                                                                    64, tokenizer, 64))
    chars, char_masked, subwords, subword_masked = mask_words(batch, 0.5, torch.Generator().manual_seed(1),
                                                               tokenizer.mask_token_id, len(tokenizer))
    for row in range(8):
        for (c0, c1), (s0, s1), real in zip(batch["char_spans"][row], batch["subword_spans"][row], batch["word_mask"][row]):
            if real and char_masked[row, c0:c1].any():
                hidden_chars = (chars[row, c0:c1] == CHAR_MASK).all()
                assert hidden_chars == (subwords[row, s0:s1] == tokenizer.mask_token_id).all()
