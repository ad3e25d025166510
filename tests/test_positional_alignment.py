"""Positional alignment: each character is told its subword, each subword its character span."""

import pytest
import torch

from entangle.modeling.positional_alignment import char_owners
from entangle.options import ConfigError
from entangle.predict import Tagger
from tiny import tiny_model


def _window(sentence):
    model, tokenizer = tiny_model(m=1, positional_alignment=True)
    tagger = Tagger(model, tokenizer)
    (window,) = tagger.featurizer.featurize([sentence])
    return tagger, window


def test_each_character_belongs_to_the_subword_that_spells_it():
    tagger, window = _window(["New", "York"])
    tokens = tagger.tokenizer.convert_ids_to_tokens(window.subword_ids)
    owners = char_owners(len(window.char_ids), torch.tensor([window.subword_char_starts]),
                         torch.tensor([window.subword_char_ends]), torch.ones(1, len(tokens), dtype=torch.bool),
                         outside=-1)[0].tolist()
    spelled = {}
    for position, owner in enumerate(owners):
        spelled.setdefault(owner, []).append(position)
    # The start and end markers belong to the special tokens; the space between the words to none.
    assert tokens[owners[0]] == tagger.tokenizer.cls_token and tokens[owners[-1]] == tagger.tokenizer.sep_token
    assert spelled[-1] == [4]
    text = "".join(chr(c) for c in window.char_ids[1:-1])
    for owner, positions in spelled.items():
        if 0 < owner < len(tokens) - 1:
            assert tokens[owner].removeprefix("##") == "".join(text[p - 1] for p in positions).lower()


def test_padding_subwords_hold_no_character():
    starts, ends = torch.tensor([[0, 1, 5, 0]]), torch.tensor([[0, 3, 5, 0]])
    mask = torch.tensor([[True, True, True, False]])  # the last subword is padding, its span (0, 0)
    assert char_owners(6, starts, ends, mask, outside=9).tolist() == [[0, 1, 1, 1, 9, 2]]


def test_the_model_reads_the_alignment():
    """Telling the sides a different alignment changes what they predict: the embeddings are used."""
    tagger, window = _window(["New", "York", "is", "big"])
    batch = tagger.collator([window])
    shifted = dict(batch, subword_char_starts=batch["subword_char_starts"].flip(-1),
                   subword_char_ends=batch["subword_char_ends"].flip(-1))
    with torch.no_grad():
        a, b = tagger.model(**batch), tagger.model(**shifted)
    assert not torch.allclose(a.subword_logits, b.subword_logits)
    assert not torch.allclose(a.char_logits, b.char_logits)


def test_it_needs_coattention():
    with pytest.raises(ConfigError, match="positional_alignment .* needs co-attention"):
        tiny_model(m=0, side="subword", positional_alignment=True)


def test_a_character_task_gets_the_same_spans_as_a_word_task():
    """Its heads read every character, but each subword still spans the characters that spell it."""
    words = ["New", "York", "is", "big"]
    spans = []
    for task, side in (("ner", "both"), ("char-tagging", "char")):
        model, tokenizer = tiny_model(m=1, side=side, task=task, labels=["A", "B"], positional_alignment=True)
        (window,) = Tagger(model, tokenizer).featurizer.featurize([words])
        spans.append((window.subword_char_starts, window.subword_char_ends))
    assert spans[0] == spans[1]
