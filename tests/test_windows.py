"""Sentences longer than an encoder's limit: overlapping windows, every word predicted exactly once."""

import pytest
import torch

from entangle.data import batching
from entangle.data.features import IGNORE, Featurizer
from entangle.modeling import EntangleForTokenClassification
from entangle.predict import Tagger
from tiny import subword_encoder, tiny_model, wordpiece_tokenizer

LONG = ("the quick brown fox jumps over the lazy dog near São Paulo 😀 lol sooo gooood " * 6).split()


def owners(windows, n_words):
    count = [0] * n_words
    for w in windows:
        for i in range(w.own_start, w.own_end):
            count[i] += 1
    return count


@pytest.mark.parametrize("max_chars, max_subwords", [(60, 512), (2048, 20), (40, 16)])
def test_windows_fit_the_limits_overlap_and_own_each_word_once(max_chars, max_subwords):
    featurizer = Featurizer(wordpiece_tokenizer(), max_chars, max_subwords)
    windows = featurizer.featurize([LONG], [list(range(len(LONG)))])
    assert len(windows) > 2
    assert owners(windows, len(LONG)) == [1] * len(LONG)
    for previous, current in zip(windows, windows[1:]):
        assert current.start < previous.end, "consecutive windows share context"
        assert previous.own_end == current.own_start
    for w in windows:
        assert len(w.char_ids) <= max_chars and len(w.subword_ids) <= max_subwords
        # training labels only on owned words
        assert [label for label in w.labels if label != IGNORE] == list(range(w.own_start, w.own_end))


def test_a_word_longer_than_a_window_is_clipped_but_still_predicted():
    featurizer = Featurizer(wordpiece_tokenizer(), max_chars=12, max_subwords=6)
    words = ["a", "x" * 50, "b"]
    windows = featurizer.featurize([words])
    assert owners(windows, 3) == [1, 1, 1]
    assert all(len(w.char_ids) <= 12 and len(w.subword_ids) <= 6 for w in windows)


def test_a_word_taking_most_of_a_window_costs_a_few_windows_each_owning_words():
    """Context that no longer fits beside the next word once made each next window end where the
    last one did: a window per context word (quadratic), most owning nothing (a NaN loss)."""
    featurizer = Featurizer(None, max_chars=2048, max_subwords=None)
    words = ["a"] * 300 + ["x" * 2000, "b"]
    windows = featurizer.featurize([words], [list(range(len(words)))])
    assert len(windows) == 3 and owners(windows, len(words)) == [1] * len(words)
    assert all(w.own_end > w.own_start for w in windows)
    small = Featurizer(None, max_chars=20, max_subwords=None).featurize([["hello", "a", "b", "x" * 18, "c"]])
    assert [(w.start, w.end, w.own_start, w.own_end) for w in small] == [(0, 3, 0, 3), (3, 4, 3, 4), (4, 5, 4, 5)]


def test_short_sentence_is_one_window():
    featurizer = Featurizer(wordpiece_tokenizer(), 2048, 512)
    [window] = featurizer.featurize([["just", "short"]])
    assert (window.start, window.end, window.own_start, window.own_end) == (0, 2, 0, 2)


def test_tagger_predicts_every_word_of_a_long_sentence_once():
    model, tokenizer = tiny_model(m=1, max_chars=50, max_subwords=16)
    tagger = Tagger(model, tokenizer, batch_size=4)
    assert len(tagger.featurizer.featurize([LONG])) > 3
    [tagged] = tagger.tag([LONG])
    assert tagged.words == LONG and len(tagged.labels) == len(LONG)
    probabilities = tagger.probabilities([LONG, ["short"]])
    for side in ("subword", "char"):
        long_probs = probabilities[side][0]
        assert long_probs.shape == (len(LONG), len(tagger.labels))
        assert torch.allclose(long_probs.sum(-1), torch.ones(len(LONG)), atol=1e-5)


def test_empty_sentence_gets_an_empty_prediction():
    model, tokenizer = tiny_model(m=1)
    [tagged] = Tagger(model, tokenizer).tag([[]])
    assert tagged.labels == [] and tagged.probabilities == []


def test_batches_sorted_by_length_give_what_one_sentence_at_a_time_gives():
    """The inference fast path (windows sorted by length into padded batches) against the
    reference (each sentence alone, no padding): same probabilities, back in input order."""
    model, tokenizer = tiny_model(m=2, max_chars=50, max_subwords=16)
    sentences = [["short"], LONG, "a mid length one , lol".split(), ["x"], "the lazy dog".split()]
    batched = Tagger(model, tokenizer, batch_size=4).probabilities(sentences)
    alone = Tagger(model, tokenizer, batch_size=1).probabilities(sentences)
    for side in ("subword", "char"):
        for fast, reference, words in zip(batched[side], alone[side], sentences):
            assert fast.shape == (len(words), len(model.config.id2label))
            assert torch.allclose(fast, reference, atol=1e-5), (side, words[:3], (fast - reference).abs().max())


@pytest.mark.parametrize("task, options", [("ner", {}), ("char-tagging", {"labels": ["A", "B"], "side": "char"}),
                                           ("classification", {"labels": ["neg", "pos"]})])
def test_featurizing_in_worker_processes_gives_what_featurizing_here_gives(task, options):
    """Chunks featurized in two DataLoader workers (a GPU's fast path): every unit of every
    sentence, long ones (several windows), empty ones and those of later chunks included, gets
    the same probabilities as with the whole input featurized in this process."""
    from entangle.data.batching import CHUNK_BATCHES

    model, tokenizer = tiny_model(m=1, max_chars=50, max_subwords=16, task=task, **options)
    sentences = [["short"], LONG, [], "a mid length one , lol".split(), ["x"], "the lazy dog".split()] * 3
    batch_size = 2
    assert len(sentences) > 2 * CHUNK_BATCHES * batch_size  # several chunks, each in a worker
    here = Tagger(model, tokenizer, batch_size=batch_size, featurize_workers=0).probabilities(sentences)
    workers = Tagger(model, tokenizer, batch_size=batch_size, featurize_workers=2).probabilities(sentences)
    for side in here:
        for expected, actual, words in zip(here[side], workers[side], sentences):
            assert actual.shape == expected.shape and (len(expected) > 0) == bool(words)
            assert torch.allclose(actual, expected, atol=1e-5), (side, words[:3])


def test_the_input_is_featurized_here_unless_workers_are_asked_for(monkeypatch):
    model, tokenizer = tiny_model(m=1)
    sentences = [LONG[:n] for n in (3, 40, 7)] * 4  # more than one chunk of two batches

    def no_workers(*args, **kwargs):
        raise AssertionError("worker processes started")

    monkeypatch.setattr(batching, "DataLoader", no_workers)
    probabilities = Tagger(model, tokenizer, batch_size=2).probabilities(sentences)
    assert [len(p) for p in probabilities["subword"]] == [len(s) for s in sentences]
    with pytest.raises(AssertionError, match="worker processes started"):
        Tagger(model, tokenizer, batch_size=2, featurize_workers=2).probabilities(sentences)


def test_a_tokenizer_without_a_padding_token_still_batches_sentences_of_different_lengths():
    model, tokenizer = tiny_model(m=1)
    sentences = [["Peter", "lives", "in", "New", "York"], ["lol"]]
    expected = Tagger(model, tokenizer, batch_size=1).probabilities(sentences)
    tokenizer.pad_token = None  # as GPT-2's and Llama's tokenizers come
    assert tokenizer.pad_token_id is None
    batched = Tagger(model, tokenizer, batch_size=2).probabilities(sentences)
    for side in expected:
        assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(expected[side], batched[side]))


def test_a_window_longer_than_the_encoder_takes_is_refused_when_built():
    """The tiny BERT has 64 positions: a longer subword window would fail mid-training, in its position table."""
    from entangle.options import ConfigError

    with pytest.raises(ConfigError, match=r"^max_subwords=65 is more than this encoder takes \(64\): give "
                                          r"--max-subwords 64 or less$"):
        tiny_model(m=1, max_subwords=65)
    assert tiny_model(m=1, max_subwords=64)[0].config.max_subwords == 64
    # A subword model given as an object without its tokenizer: its position table still bounds the window.
    encoder, _ = subword_encoder("bert")
    with pytest.raises(ConfigError, match=r"^max_subwords=65 is more than this encoder takes \(64\)"):
        EntangleForTokenClassification.from_encoders(None, encoder, ["O", "B-X"], num_coattention_layers=0,
                                                     side="subword", max_subwords=65)
    # The character side too: a CANINE built from a config with 64 hash buckets, the rows of Hugging
    # Face's CANINE position table (not CANINE's 2048).
    with pytest.raises(ConfigError, match=r"^max_chars=65 is more than this encoder takes \(64\)"):
        tiny_model(m=0, side="char", char="canine", max_chars=65)
    canine = Tagger(*tiny_model(m=0, side="char", char="canine"))
    assert canine.model.config.max_chars == 64
    assert len(canine.tag([["abcdefghij"] * 60])[0].labels) == 60  # 659 characters: windows, not a crash
