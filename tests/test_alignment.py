"""Word <-> character and word <-> subword alignment on tricky Unicode, for every tokenizer family."""

import pytest

from entangle.data.features import CHAR_CLS, CHAR_MASK, CHAR_SEP, SPACE, Featurizer
from tiny import bytelevel_bpe_tokenizer, unigram_tokenizer, wordpiece_tokenizer

TRICKY = [
    "Naïve",  # precomposed accent
    "e\u0301cole",  # combining acute accent: two code points, one visible letter
    "👩\u200d👩\u200d👧",  # emoji joined by zero-width joiners
    "東京",  # CJK
    "مرحبا",  # Arabic (right-to-left)
    "\u200b",  # zero-width space: BERT's normaliser removes it, so the tokenizer drops the word
    "ᚠᚢᚦ",  # runes: unknown to every tiny vocabulary
    "@paulwalk",
    "it's",
    "sooo",
]

FAMILIES = {
    "wordpiece": wordpiece_tokenizer,
    "bytelevel-bpe": bytelevel_bpe_tokenizer,
    "unigram": unigram_tokenizer,
}


def alone(tokenizer, word: str, first: bool, family: str) -> list[int]:
    """How the tokenizer splits the word by itself, as it appears inside a sentence."""
    text = word if first or family != "bytelevel-bpe" else " " + word  # BPE: the leading space is in the token
    return tokenizer(text, add_special_tokens=False)["input_ids"]


@pytest.mark.parametrize("family", FAMILIES)
def test_every_word_gets_its_own_subwords(family):
    tokenizer = FAMILIES[family]()
    featurizer = Featurizer(tokenizer, max_chars=2048, max_subwords=512)
    aligned = featurizer.align([TRICKY])[0]
    for position, (word, pieces) in enumerate(zip(TRICKY, aligned.subwords)):
        assert pieces, word
        expected = alone(tokenizer, word, position == 0, family)
        if expected:
            assert pieces == expected, (word, tokenizer.convert_ids_to_tokens(pieces), tokenizer.convert_ids_to_tokens(expected))
        else:
            assert pieces == [tokenizer.unk_token_id], word  # a dropped word is represented by the unknown token


@pytest.mark.parametrize("family", FAMILIES)
def test_window_inputs_point_at_each_words_first_subword_and_character(family):
    tokenizer = FAMILIES[family]()
    featurizer = Featurizer(tokenizer, max_chars=2048, max_subwords=512)
    [window] = featurizer.featurize([TRICKY])
    aligned = featurizer.align([TRICKY])[0]
    # subword side: special tokens around the words' pieces in order; each start is the word's first piece
    assert window.subword_ids == featurizer.prefix + [i for p in aligned.subwords for i in p] + featurizer.suffix
    for start, pieces in zip(window.subword_word_starts, aligned.subwords):
        assert window.subword_ids[start] == pieces[0]
    # character side: the sentence's code points, spaces kept, between start and end markers
    assert window.char_ids == [CHAR_CLS, *map(ord, " ".join(TRICKY)), CHAR_SEP]
    for start, word in zip(window.char_word_starts, TRICKY):
        assert window.char_ids[start] == ord(word[0])
        assert start == 1 or window.char_ids[start - 1] == SPACE


def test_combining_marks_and_emoji_count_as_code_points():
    featurizer = Featurizer(None, max_chars=2048, max_subwords=None)
    aligned = featurizer.align([["e\u0301", "👩\u200d👧"]])[0]
    assert aligned.chars == [[ord("e"), 0x301], [0x1F469, 0x200D, 0x1F467]]
    assert aligned.subwords is None


def test_no_text_passes_for_a_marker_of_the_character_side():
    featurizer = Featurizer(None, max_chars=2048, max_subwords=None)
    markers = "".join(map(chr, (CHAR_CLS, CHAR_SEP, CHAR_MASK)))
    window = next(iter(featurizer.featurize([["a" + markers, "\ue002"]])))
    assert window.char_ids == [CHAR_CLS, ord("a"), 0xFFFD, 0xFFFD, 0xFFFD, SPACE, 0xE002, CHAR_SEP]


def test_whitespace_words_are_rejected_with_their_position():
    featurizer = Featurizer(wordpiece_tokenizer(), max_chars=2048, max_subwords=512)
    with pytest.raises(ValueError, match="sentence 0: word 1"):
        featurizer.align([["ok", " "]])
