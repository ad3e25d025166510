"""Words -> model inputs: character ids, subword ids, where each word starts on both sides.

The sentence is the words joined by single spaces (CANINE was pretrained on running text, so
the spaces stay). The character side is that text's code points between start/end markers;
the subword side is the tokenizer's ids for the same text, assigned to words by character
offsets, which works for every tokenizer family (WordPiece, byte-level BPE, SentencePiece).

A model that reads each subword's characters (CharBERT) also gets, for every subword position,
the positions of its first and last character on the character side.

A sentence longer than either encoder's limit is cut into overlapping windows on word
boundaries; each word is *owned* (labelled in training, predicted at inference) by exactly one
window: where two windows overlap, the overlap is split in the middle, so a word is predicted
by the window in which it sits farther from a cut.

What the heads read depends on the task's unit (``entangle.tasks``): each word's first
subword and first character (``word``), every character of every word (``char``), or the
first position of each side (``text``: every window of a long text carries the text's label,
and at inference the windows' probabilities are averaged, weighted by the words each owns).
"""

from __future__ import annotations

import gc
from bisect import bisect_right
from contextlib import contextmanager
from dataclasses import dataclass, field
from itertools import accumulate

from transformers import PreTrainedTokenizerBase

from ..options import ConfigError
from ..tasks import UNITS, get_task

# CANINE's conventions (private-use code points), used by the built-in encoder too.
CHAR_CLS, CHAR_SEP, CHAR_PAD, CHAR_MASK = 0xE000, 0xE001, 0, 0xE003
_MARKERS = frozenset((CHAR_CLS, CHAR_SEP, CHAR_MASK))
SPACE = ord(" ")
#: Share of a window's budget repeated as context at the start of the next window (at least one
#: word when that word fits beside the next one).
CONTEXT_SHARE = 0.25
IGNORE = -100


@dataclass
class AlignedSentence:
    """Per word: its code points and its subword ids (clipped to fit a window on their own);
    with ``subword_spans``, each subword's first and last character, counted from the word's start."""

    chars: list[list[int]]
    subwords: list[list[int]] | None
    #: Code points of each word before clipping (a character task labels every one).
    lengths: list[int]
    subword_spans: list[list[tuple[int, int]]] | None = None


@dataclass
class Window:
    """One model input: words ``[start, end)`` of sentence ``sentence``; it owns ``[own_start, own_end)``.

    Its head outputs ``own_rows`` (a range of its rows) are the sentence's units ``own_units``
    (for a text task, the window's one row, weighted by the words it owns).
    """

    sentence: int
    start: int
    end: int
    own_start: int
    own_end: int
    own_rows: tuple[int, int] = (0, 0)
    own_units: tuple[int, int] = (0, 0)
    char_ids: list[int] = field(default_factory=list)
    char_word_starts: list[int] = field(default_factory=list)
    subword_ids: list[int] = field(default_factory=list)
    subword_word_starts: list[int] = field(default_factory=list)
    # Per subword position (special tokens included): its first and last character's position in
    # char_ids; special tokens before the text point at the start marker, those after at the end marker.
    subword_char_starts: list[int] = field(default_factory=list)
    subword_char_ends: list[int] = field(default_factory=list)
    labels: list[int] | None = None

    @property
    def length(self) -> int:
        return max(len(self.char_ids), len(self.subword_ids))


class Featurizer:
    """Aligns words with characters and subwords and cuts windows; one per model.

    ``unit``: what the heads read (see the module docstring). ``subword_char_spans``: also give
    every subword position its first and last character (the character side is then built even
    without a character encoder, ``max_chars=None``, and only the subword limit cuts windows).
    """

    def __init__(self, tokenizer: PreTrainedTokenizerBase | None, max_chars: int | None, max_subwords: int | None,
                 unit: str = "word", subword_char_spans: bool = False):
        if unit not in UNITS:
            raise ValueError(f"unit must be one of {UNITS}, got {unit!r}")
        if unit == "char" and max_chars is None:
            raise ValueError("labelling characters needs the character encoder")
        self.unit = unit
        self.tokenizer = tokenizer if max_subwords is not None else None
        if subword_char_spans and self.tokenizer is None:
            raise ValueError("subword_char_spans needs a tokenizer and max_subwords")
        self.subword_char_spans = subword_char_spans
        self.use_chars = max_chars is not None or subword_char_spans
        self.max_chars = max_chars
        self.max_subwords = max_subwords
        if max_chars is not None and max_chars < 3:
            raise ConfigError(f"max_chars must leave room for the start/end markers and one character, got {max_chars}")
        if self.tokenizer is not None:
            self.prefix, self.suffix = _special_tokens(self.tokenizer)
            if max_subwords <= len(self.prefix) + len(self.suffix):
                raise ConfigError(f"max_subwords={max_subwords} leaves no room beside the special tokens")

    @classmethod
    def for_model(cls, config, tokenizer: PreTrainedTokenizerBase | None) -> "Featurizer":
        return cls(
            tokenizer if config.uses_subword else None,
            config.max_chars if config.uses_char else None,
            config.max_subwords if config.uses_subword else None,
            get_task(config.task).unit,
            subword_char_spans=config.uses_subword_char_spans,
        )

    @property
    def char_budget(self) -> int:
        return self.max_chars - 2  # start and end markers

    @property
    def subword_budget(self) -> int:
        return self.max_subwords - len(self.prefix) - len(self.suffix)

    def subword_word_spans(self, window: Window) -> list[tuple[int, int]]:
        """Each of the window's words as ``[start, end)`` subword positions (the special tokens
        around the text belong to no word)."""
        ends = window.subword_word_starts[1:] + [len(window.subword_ids) - len(self.suffix)]
        return list(zip(window.subword_word_starts, ends))

    # ------------------------------------------------------------------ alignment
    def align(self, sentences: list[list[str]]) -> list[AlignedSentence]:
        check_words(sentences)
        if self.tokenizer is not None and sentences:  # a tokenizer cannot encode an empty batch
            subwords, spans = self._align_subwords(sentences)
        else:
            subwords, spans = [None] * len(sentences), [None] * len(sentences)
        limit = self.char_budget if self.max_chars is not None else None
        chars = [[code_points(word, limit) for word in words] for words in sentences] if self.use_chars else None
        return [
            AlignedSentence(chars[i] if chars is not None else [[] for _ in words], subwords[i], [len(w) for w in words],
                            spans[i] if self.subword_char_spans else None)
            for i, words in enumerate(sentences)
        ]

    def _align_subwords(self, sentences: list[list[str]]) -> tuple[list[list[list[int]]], list[list[list[tuple[int, int]]]]]:
        """Per sentence, per word: subword ids, and each subword's (first, last) character in the word."""
        texts = [" ".join(words) for words in sentences]
        encoded = self.tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)
        unk = self.tokenizer.unk_token_id
        budget = self.subword_budget
        aligned, spans = [], []
        for words, ids, offsets in zip(sentences, encoded["input_ids"], encoded["offset_mapping"]):
            per_word = _assign_tokens(words, offsets)
            sentence_ids, sentence_spans = [], []
            word_start = 0
            for position, tokens in enumerate(per_word):
                pieces = [ids[k] for k in tokens]
                word_spans = []
                if self.subword_char_spans:
                    word_spans = _char_spans(word_start, len(words[position]), [offsets[k] for k in tokens])
                    word_start += len(words[position]) + 1
                if not pieces:
                    # The tokenizer dropped the word (e.g. only characters its normaliser removes);
                    # it still needs a position to be predicted from.
                    if unk is None:
                        raise ValueError(f"the tokenizer produced no subword for {words[position]!r} and has no unknown token")
                    pieces.append(unk)
                    word_spans.append((0, len(words[position]) - 1))
                sentence_ids.append(pieces[:budget])
                sentence_spans.append(word_spans[:budget])
            aligned.append(sentence_ids)
            spans.append(sentence_spans)
        return aligned, spans

    # ------------------------------------------------------------------ windows
    def windows(self, aligned: AlignedSentence) -> list[tuple[int, int]]:
        """Word ranges ``[start, end)`` that fit both encoders, consecutive ones overlapping."""
        n = len(aligned.chars)
        # Costs summed up to each word, so that a range's cost is one subtraction: the word and
        # the space after it on the character side, its subwords on the other.
        char_total = list(accumulate((len(c) + 1 for c in aligned.chars), initial=0))
        subword_total = list(accumulate((len(s) for s in aligned.subwords), initial=0)) if aligned.subwords is not None else None
        char_budget = self.char_budget if self.max_chars is not None else None
        subword_budget = self.subword_budget if subword_total is not None else None

        def fits(start: int, end: int, share: float = 1.0) -> bool:
            chars_ok = char_budget is None or char_total[end] - char_total[start] - 1 <= share * char_budget
            subwords_ok = subword_budget is None or subword_total[end] - subword_total[start] <= share * subword_budget
            return chars_ok and subwords_ok

        if n == 0:
            return []
        if fits(0, n):
            return [(0, n)]  # most sentences: one window
        ranges = []
        start = 0
        while True:
            end = start + 1  # a single word always fits: it was clipped to the budget
            while end < n and fits(start, end + 1):
                end += 1
            ranges.append((start, end))
            if end >= n:
                return ranges
            # Context before the next word, within its share of the budget and only as much as still
            # fits beside that word: else the next window could not reach it and would end where
            # this one does (near-copies of one window, a word at a time, owning nothing).
            next_start = end
            while next_start - 1 > start and fits(next_start - 1, end, CONTEXT_SHARE) and fits(next_start - 1, end + 1):
                next_start -= 1
            if next_start == end and end - 1 > start and fits(end - 1, end + 1):
                next_start = end - 1  # at least one word of context whenever it fits beside the next word
            start = next_start

    def featurize(self, sentences: list[list[str]], labels: list[list[int]] | None = None) -> list[Window]:
        """All windows of all sentences; ``labels`` (per sentence, one id per unit: word,
        character or text) are kept for owned units only (a text's label for every window)."""
        with _without_cycle_collection():
            return self._featurize(sentences, labels)

    def _featurize(self, sentences: list[list[str]], labels: list[list[int]] | None) -> list[Window]:
        windows = []
        for index, aligned in enumerate(self.align(sentences)):
            ranges = self.windows(aligned)
            # Where each word's units start among the sentence's units.
            per_word = aligned.lengths if self.unit == "char" else [1] * len(aligned.lengths)
            offsets = [0]
            for count in per_word:
                offsets.append(offsets[-1] + count)
            for k, (start, end) in enumerate(ranges):
                own_start = start if k == 0 else (start + ranges[k - 1][1]) // 2
                own_end = end if k == len(ranges) - 1 else (ranges[k + 1][0] + end) // 2
                window = Window(index, start, end, own_start, own_end)
                if self.unit == "text":
                    window.own_rows, window.own_units = (0, 1), (0, 1)
                else:
                    window.own_rows = (offsets[own_start] - offsets[start], offsets[own_end] - offsets[start])
                    window.own_units = (offsets[own_start], offsets[own_end])
                self._fill(window, aligned, labels[index] if labels is not None else None, offsets)
                windows.append(window)
        return windows

    def _fill(self, window: Window, aligned: AlignedSentence, labels: list[int] | None, offsets: list[int]) -> None:
        words = range(window.start, window.end)
        word_starts = []  # where each word's characters start in char_ids
        if self.use_chars:
            window.char_ids, word_starts = char_window([aligned.chars[i] for i in words])
            window.char_word_starts = word_starts
            if self.unit == "char":
                # Every character of every word; the characters of a word clipped to fit a window
                # are read at its last kept character, so each still gets a prediction.
                window.char_word_starts = [start + min(k, len(aligned.chars[i]) - 1)
                                           for start, i in zip(window.char_word_starts, words)
                                           for k in range(aligned.lengths[i])]
        if aligned.subwords is not None:
            ids = list(self.prefix)
            for i in words:
                window.subword_word_starts.append(len(ids))
                ids.extend(aligned.subwords[i])
            ids.extend(self.suffix)
            window.subword_ids = ids
        if aligned.subword_spans is not None:
            self._fill_char_spans(window, aligned, word_starts)
        if self.unit == "text":
            # The heads read the first position; no per-word positions are needed.
            window.char_word_starts, window.subword_word_starts = [], []
        if labels is None:
            return
        if self.unit == "text":
            window.labels = list(labels)
        elif self.unit == "word":
            window.labels = [labels[i] if window.own_start <= i < window.own_end else IGNORE for i in words]
        else:
            window.labels = [labels[offsets[i] + k] if window.own_start <= i < window.own_end and k < len(aligned.chars[i])
                             else IGNORE for i in words for k in range(aligned.lengths[i])]


    def _fill_char_spans(self, window: Window, aligned: AlignedSentence, word_starts: list[int]) -> None:
        starts, ends = [0] * len(self.prefix), [0] * len(self.prefix)  # the start marker
        for i, word_start in zip(range(window.start, window.end), word_starts):
            spans = aligned.subword_spans[i]
            if len(aligned.chars[i]) == aligned.lengths[i]:  # most words: whole, their spans inside them already
                starts.extend([word_start + first for first, _ in spans])
                ends.extend([word_start + last for _, last in spans])
                continue
            last_char = len(aligned.chars[i]) - 1  # the word was clipped to the character budget
            for first, last in spans:
                starts.append(word_start + min(first, last_char))
                ends.append(word_start + min(last, last_char))
        end_marker = len(window.char_ids) - 1
        window.subword_char_starts = starts + [end_marker] * len(self.suffix)
        window.subword_char_ends = ends + [end_marker] * len(self.suffix)


@contextmanager
def _without_cycle_collection():
    """Python's cycle collector off while featurizing: its many small lists (never in a cycle, so
    freed by reference counting all the same) set off collections that each scan every object
    the process holds (a loaded model's and corpus's too), which took 2-3x the featurizing time
    itself (``benchmarks/featurize_speed.py``)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def code_points(word: str, limit: int | None = None) -> list[int]:
    """A word's first ``limit`` code points as the character side reads them: a private-use code
    point that the side keeps as a marker (start, end, mask) is read as U+FFFD, so that no text
    passes for a window's start or end."""
    ids = list(map(ord, word[:limit]))
    if ids and max(ids) >= CHAR_CLS and not _MARKERS.isdisjoint(ids):  # max first: most words are far below
        ids = [0xFFFD if i in _MARKERS else i for i in ids]
    return ids


def check_words(sentences: list[list[str]]) -> None:
    """Every word has a visible character: an empty or whitespace-only word has nothing to encode."""
    for index, words in enumerate(sentences):
        for position, word in enumerate(words):
            if not word.strip():
                raise ValueError(f"sentence {index}: word {position} is empty or whitespace only ({word!r})")


def char_window(words: list[list[int]]) -> tuple[list[int], list[int]]:
    """The code points of words joined by spaces between the start/end markers, and where each word starts."""
    ids, starts = [CHAR_CLS], []
    for i, word in enumerate(words):
        if i:
            ids.append(SPACE)
        starts.append(len(ids))
        ids.extend(word)
    ids.append(CHAR_SEP)
    return ids, starts


def _special_tokens(tokenizer: PreTrainedTokenizerBase) -> tuple[list[int], list[int]]:
    """The ids the tokenizer puts before and after a text (e.g. [CLS] / [SEP], <s> / </s>)."""
    probe = tokenizer("a", add_special_tokens=True, return_special_tokens_mask=True)
    ids, special = probe["input_ids"], probe["special_tokens_mask"]
    first = special.index(0)
    last = len(special) - special[::-1].index(0)
    return ids[:first], ids[last:]


def _assign_tokens(words: list[str], offsets: list[tuple[int, int]]) -> list[list[int]]:
    """Give each token of ``" ".join(words)`` (its index) to the word its first non-space character is in.

    Tokens covering only whitespace or nothing (SentencePiece's lone ``▁``) go to the next word,
    whose start they mark.
    """
    starts, ends = [], []
    position = 0
    for word in words:
        starts.append(position)
        ends.append(position + len(word))
        position += len(word) + 1
    per_word: list[list[int]] = [[] for _ in words]
    pending: list[int] = []
    for token, (begin, finish) in enumerate(offsets):
        word = bisect_right(starts, begin) - 1
        if word < 0 or begin >= ends[word]:
            # The token starts in a space: it belongs to the next word if it reaches into it.
            word = word + 1 if word + 1 < len(words) and starts[word + 1] < finish else None
        if word is None:
            pending.append(token)
            continue
        per_word[word].extend(pending)
        per_word[word].append(token)
        pending = []
    if pending and words:
        per_word[-1].extend(pending)
    return per_word


def _char_spans(start: int, length: int, offsets: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Each token's first and last character, counted from its word's first character (at
    ``start`` in the text, ``length`` long), kept inside the word: a token that starts in the space
    before it, like SentencePiece's lone ``▁``, gets the word's first character."""
    last_char = length - 1
    spans = []
    for begin, finish in offsets:  # clamped with comparisons: min() and max() calls were most of featurizing's time here
        first = begin - start
        first = 0 if first < 0 else last_char if first > last_char else first
        last = finish - 1 - start
        spans.append((first, first if last < first else last_char if last > last_char else last))
    return spans
