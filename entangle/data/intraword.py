"""Intra-word code-switching as character-level language labels (Mager, Çetinoğlu & Kann, 2019).

Every character of every word gets a language label, so a word that switches language inside
("ne|amiga": Wixarika prefix, Spanish stem) is labelled character by character. Only words are
labelled: the spaces between words are not characters of any word, and punctuation, emoji and
numbers are words of their own with the label the annotation gives them (``OTHER``).

Two readers, one output type (:class:`CharTaggedSentence`):

- **Spanish–Wixarika** (``mixed_annotated.txt``): ``post<TAB>word<TAB>TAG`` lines, morph
  boundaries in the word marked with ``|``; a word tagged ``MIXED`` is followed by one line per
  morph, ``- morph TAG``. Labels are the annotation's tags as written (:data:`WIXARIKA_LABELS`):
  the language, named entities by language (``NE.ES``), slang by language (``ES.SLANG``); the
  paper's own segmenter data uses the same tags. The file is hand-edited: what can be repaired
  unambiguously is, what cannot is skipped (a whole post, never a single word, so no text is
  changed); :class:`RepairReport` counts each kind (:data:`KINDS`) and is logged as one warning
  per file. It has no published split: :func:`split_by_id` makes a fixed, seeded one by post id.
- **Turkish–German SAGT** (CoNLL-U, UD_Turkish_German-SAGT): ``CSID`` in MISC gives each token's
  language (:data:`SAGT_LABELS`, plus ``MIXED``) and ``CSPoint=Stem§suffix`` the switch point of a
  mixed token. The stem is German and the suffix Turkish (German nouns with Turkish case and
  possessive suffixes: ``Prüfung§um``; the treebank's multi-word tokens confirm it, e.g.
  ``spannenddi`` = ``spannend`` DE + ``di`` TR), except where the stem is spelled with a letter
  only Turkish has (ı, ş, ğ: ``arı§s``, "bees" with the German plural), which makes the stem
  Turkish and the suffix German. Stems from a third language (``live§ken``) are labelled ``DE``
  too: the annotation does not say which stems are English. The units are the *surface tokens*
  (the text as written): a multi-word token (``vardı`` = ``var`` + ``dı``) is one word with its
  own ``CSID``/``CSPoint``, and its syntactic words are not labelled separately, because language
  IDs label the text and the multi-word token line carries the switch point of the whole form.
"""

from __future__ import annotations

import hashlib
import re
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from .conll import DataFormatError, decoded_lines
from .conllu import sentence_rows
from .datasets import SPLITS

MIXED = "MIXED"
UNKNOWN = "?"  # the annotator could not tell the language
#: Character labels of Spanish–Wixarika: the annotation's tags other than MIXED and '?'.
WIXARIKA_LABELS = ("ES", "WIX", "EN", "NE", "NE.ES", "NE.WIX", "NE.EN", "ES.SLANG", "EN.SLANG", "WIX.SLANG", "OTHER")
#: Tags written in another order in the file, read as their usual spelling.
TAG_ALIASES = {"WIX.NE": "NE.WIX"}
#: Character labels of Turkish–German SAGT (CSID values other than MIXED).
SAGT_LABELS = ("DE", "TR", "LANG3", "OTHER")
#: Letters Turkish spells and German (and English) never do: a stem holding one is Turkish.
TURKISH_ONLY_LETTERS = frozenset("ıİşŞğĞ")
CSPOINT_MARK = "§"

#: Repairs and skips a reader reports: kind -> (whether the sentence is dropped, description).
KINDS: dict[str, tuple[bool, str]] = {
    # Spanish–Wixarika, line level
    "trailing-field": (False, "empty trailing TAB field dropped"),
    "tag-in-next-field": (False, "empty tag column: the tag in the next field used"),
    "unsure-mark": (False, "'?' after the tag (annotator unsure): the tag kept"),
    "tag-alias": (False, "tag written in another order (WIX.NE) read as its usual spelling (NE.WIX)"),
    "post-reappears": (True, "line dropped: its post id belongs to a post that ended earlier (out of order)"),
    # Spanish–Wixarika, morph lines
    "morphs-on-unmixed-word": (False, "morph lines after a word not tagged MIXED: their languages used"),
    "bar-in-morph": (False, "'|' inside a morph line removed"),
    "segmentation-from-morphs": (False, "morph lines spell the word but split it elsewhere: their boundaries used"),
    "morph-case": (False, "morph lines differ from the word in letter case only: the word's spelling kept"),
    "morph-spelling": (False, "morph lines misspell the word, one per '|' morph: their languages used in order"),
    "mixed-one-language": (False, "MIXED word whose morphs all have one language: not counted as mixed"),
    "missing-tag": (True, "post skipped: word without a tag"),
    "unknown-language": (True, "post skipped: a word or morph tagged '?' (language unknown)"),
    "mixed-without-morphs": (True, "post skipped: MIXED word without morph lines"),
    "morph-without-language": (True, "post skipped: morph line without a language"),
    "morph-mismatch": (True, "post skipped: morph lines match the word neither letter for letter nor in number"),
    # Turkish–German SAGT
    "cspoint-on-unmixed": (False, "CSPoint on a token whose CSID is not MIXED: the CSID used for the whole token"),
    "turkish-stem": (False, "mixed token whose stem has ı/ş/ğ: stem TR, suffix DE"),
    "mixed-without-cspoint": (True, "sentence skipped: MIXED token without CSPoint"),
    "cspoint-mismatch": (True, "sentence skipped: CSPoint is not Stem§suffix spelling the token's form"),
}
MAX_EXAMPLES = 5


@dataclass
class CharTaggedSentence:
    words: list[str]
    #: one label per character (code point) of each word
    char_tags: list[list[str]]
    #: whether each word switches language inside (its characters carry more than one label)
    mixed: list[bool]
    #: ``path:line`` of the sentence, for messages about it
    source: str = ""
    #: the post id (Spanish–Wixarika) or ``sent_id`` (SAGT)
    id: str = ""
    comments: list[str] = field(default_factory=list)

    def __post_init__(self):
        if len(self.char_tags) != len(self.words) or len(self.mixed) != len(self.words):
            raise ValueError(f"{self.source}: {len(self.words)} words but {len(self.char_tags)} label lists "
                             f"and {len(self.mixed)} mixed flags")
        for word, tags in zip(self.words, self.char_tags):
            if len(tags) != len(word):
                raise ValueError(f"{self.source}: word {word!r} has {len(word)} characters but {len(tags)} labels")


@dataclass
class RepairReport:
    """What a reader repaired or skipped in one file: a count and the first lines of each kind."""

    path: str
    counts: Counter = field(default_factory=Counter)
    #: kind -> the first lines (numbers) where it happened
    lines: dict[str, list[int]] = field(default_factory=dict)

    def add(self, kind: str, line: int) -> None:
        if kind not in KINDS:
            raise KeyError(f"unknown repair kind {kind!r}")
        self.counts[kind] += 1
        shown = self.lines.setdefault(kind, [])
        if len(shown) < MAX_EXAMPLES:
            shown.append(line)

    def examples(self, kind: str) -> list[str]:
        """``path:line`` of the first occurrences of ``kind``."""
        return [f"{self.path}:{line}" for line in self.lines.get(kind, [])]

    @property
    def skipped(self) -> int:
        """Sentences (or stray lines) left out."""
        return sum(n for kind, n in self.counts.items() if KINDS[kind][0])

    def summary(self) -> str:
        parts = [f"{n} x {KINDS[kind][1]} (line{'s' if n > 1 else ''} "
                 f"{', '.join(map(str, self.lines[kind]))}{', ...' if n > len(self.lines[kind]) else ''})"
                 for kind, n in sorted(self.counts.items())]
        return f"{self.path}: {self.skipped} skipped; by kind: " + "; ".join(parts)

    def warn(self) -> None:
        if self.counts:
            warnings.warn(self.summary(), stacklevel=3)


class _Skip(Exception):
    """A sentence that cannot be labelled."""

    def __init__(self, kind: str, line: int):
        super().__init__(kind)
        self.kind, self.line = kind, line


def _sentence(words: list[str], char_tags: list[list[str]], source: str, identifier: str,
              comments: list[str] | None = None) -> CharTaggedSentence:
    mixed = [len(set(tags)) > 1 for tags in char_tags]
    return CharTaggedSentence(words, char_tags, mixed, source, identifier, comments or [])


# ---------------------------------------------------------------------------------------------
# Spanish–Wixarika


@dataclass
class _Morph:
    line: int
    text: str
    tag: str | None


@dataclass
class _Word:
    line: int
    post: str
    form: str  # as written, with '|' boundaries
    tag: str | None
    morphs: list[_Morph] = field(default_factory=list)
    #: line-level repairs, reported only if the post is kept
    repairs: list[str] = field(default_factory=list)


_POST_ID = re.compile(r"^\d+$")
_KNOWN_TAGS = (*WIXARIKA_LABELS, MIXED, UNKNOWN)


def _tag(value: str, path: Path, number: int, repairs: list[str], allowed=_KNOWN_TAGS) -> str:
    if value in TAG_ALIASES:
        repairs.append("tag-alias")
        value = TAG_ALIASES[value]
    if value not in allowed:
        raise DataFormatError(path, number, f"unknown tag {value!r} (known: {', '.join(allowed)})")
    return value


def _word_line(line: str, path: Path, number: int) -> _Word:
    fields = line.split("\t")
    if len(fields) < 3 or not _POST_ID.match(fields[0]):
        raise DataFormatError(path, number, f"expected 'POST<TAB>WORD<TAB>TAG' or a morph line '- MORPH TAG', "
                                            f"found {line!r}")
    post, form, rest = fields[0], fields[1], fields[2:]
    repairs = []
    if rest[-1] == "" and len(rest) > 1:
        repairs.append("trailing-field")
        while len(rest) > 1 and rest[-1] == "":
            rest.pop()
    if len(rest) == 2 and rest[0] == "" and rest[1]:
        repairs.append("tag-in-next-field")
        rest = rest[1:]
    if len(rest) == 2 and rest[1] == UNKNOWN and rest[0] != UNKNOWN:
        repairs.append("unsure-mark")
        rest = rest[:1]
    if len(rest) != 1:
        raise DataFormatError(path, number, f"expected one tag after the word, found {rest!r}")
    if not form.replace("|", ""):
        raise DataFormatError(path, number, "empty word")
    if any(c.isspace() for c in form):
        raise DataFormatError(path, number, f"word {form!r} contains whitespace")
    tag = _tag(rest[0], path, number, repairs) if rest[0] else None
    return _Word(number, post, form, tag, repairs=repairs)


def _morph_line(line: str, path: Path, number: int, word: _Word) -> _Morph:
    fields = line[1:].split()  # '- morph TAG' with spaces, tabs or both
    if len(fields) == 1:
        return _Morph(number, fields[0], None)
    if len(fields) != 2:
        raise DataFormatError(path, number, f"expected a morph line '- MORPH TAG', found {line!r}")
    return _Morph(number, fields[0], _tag(fields[1], path, number, word.repairs,
                                          allowed=(*WIXARIKA_LABELS, UNKNOWN)))


def _parse_wixarika(path: Path, report: RepairReport) -> list[list[_Word]]:
    """Posts (runs of lines with one post id) of words with their morph lines. A line whose post
    ended earlier is dropped without ending the current post."""
    posts: list[list[_Word]] = []
    ended: set[str] = set()
    word: _Word | None = None  # the last word line, kept or dropped: morph lines belong to it
    for number, line in decoded_lines(path):
        if not line.strip():
            continue
        if line.startswith("-"):
            if word is None:
                raise DataFormatError(path, number, "morph line before any word")
            word.morphs.append(_morph_line(line, path, number, word))
            continue
        word = _word_line(line, path, number)
        if posts and word.post == posts[-1][0].post:
            posts[-1].append(word)
        elif word.post in ended:
            report.add("post-reappears", number)
        else:
            if posts:
                ended.add(posts[-1][0].post)
            posts.append([word])
    return posts


def _morph_char_tags(word: _Word, repairs: list[str]) -> list[str]:
    """Labels of a word's characters from its morph lines (see :data:`KINDS` for the repairs)."""
    for morph in word.morphs:
        if morph.tag is None:
            raise _Skip("morph-without-language", morph.line)
        if morph.tag == UNKNOWN:
            raise _Skip("unknown-language", morph.line)
        if "|" in morph.text:
            repairs.append("bar-in-morph")
            morph.text = morph.text.replace("|", "")
    form = word.form.replace("|", "")
    own = [part for part in word.form.split("|") if part]
    texts = [morph.text for morph in word.morphs]
    spelled = "".join(texts)
    if spelled == form:
        if own != texts:
            repairs.append("segmentation-from-morphs")
        lengths = [len(text) for text in texts]
    elif len(spelled) == len(form) and spelled.lower() == form.lower():
        repairs.append("morph-case")
        lengths = [len(text) for text in texts]
    elif len(own) == len(texts):
        repairs.append("morph-spelling")
        lengths = [len(part) for part in own]
    else:
        raise _Skip("morph-mismatch", word.line)
    return [morph.tag for morph, n in zip(word.morphs, lengths) for _ in range(n)]


def _wixarika_sentence(post: list[_Word], path: Path) -> tuple[CharTaggedSentence, list[tuple[str, int]]]:
    """The post as a sentence and the repairs it needed; raises :class:`_Skip`."""
    repairs: list[tuple[str, int]] = []
    words, char_tags = [], []
    for word in post:
        repairs += [(kind, word.line) for kind in word.repairs]
        form = word.form.replace("|", "")
        if word.tag is None:
            raise _Skip("missing-tag", word.line)
        if word.tag == UNKNOWN:
            raise _Skip("unknown-language", word.line)
        if word.morphs:
            kinds: list[str] = []
            if word.tag != MIXED:
                kinds.append("morphs-on-unmixed-word")
            tags = _morph_char_tags(word, kinds)
            if len(set(tags)) == 1:
                kinds.append("mixed-one-language")
            repairs += [(kind, word.line) for kind in kinds]
        elif word.tag == MIXED:
            raise _Skip("mixed-without-morphs", word.line)
        else:
            tags = [word.tag] * len(form)
        words.append(form)
        char_tags.append(tags)
    return _sentence(words, char_tags, f"{path}:{post[0].line}", post[0].post), repairs


def read_spanish_wixarika(path: str | Path) -> tuple[list[CharTaggedSentence], RepairReport]:
    """The posts of ``mixed_annotated.txt`` (one sentence per post id, in file order) and what was
    repaired or skipped, which is also logged as one warning. Malformed lines (no post id, an
    unknown tag, an empty word, a morph line with extra fields) raise :class:`DataFormatError`."""
    path = Path(path)
    report = RepairReport(str(path))
    sentences = []
    for post in _parse_wixarika(path, report):
        try:
            sentence, repairs = _wixarika_sentence(post, path)
        except _Skip as skip:
            report.add(skip.kind, skip.line)
            continue
        for kind, line in repairs:
            report.add(kind, line)
        sentences.append(sentence)
    report.warn()
    return sentences, report


#: The Spanish–Wixarika split: fixed here so every run and every user gets the same one.
SPLIT_SEED = 20190602
SPLIT_FRACTIONS = (0.8, 0.1, 0.1)


def split_by_id(sentences: list[CharTaggedSentence], seed: int = SPLIT_SEED,
                fractions: tuple[float, float, float] = SPLIT_FRACTIONS) -> dict[str, list[CharTaggedSentence]]:
    """train/dev/test by sentence id: ids ordered by a seeded hash and cut at ``fractions``.

    A post's place in the order depends only on its id, so the split does not depend on the
    file's order, and a post added or skipped moves no other post except at most one across each
    cut. Each split keeps the input order.
    """
    ids = [sentence.id for sentence in sentences]
    if len(set(ids)) != len(ids):
        repeated = sorted({i for i in ids if ids.count(i) > 1})
        raise ValueError(f"sentence ids must be unique to split by id; repeated: {', '.join(repeated[:10])}")
    if len(fractions) != 3 or abs(sum(fractions) - 1) > 1e-9 or min(fractions) < 0:
        raise ValueError(f"fractions must be three non-negative numbers summing to 1, got {fractions}")
    ranked = sorted(ids, key=lambda i: hashlib.sha256(f"{seed}:{i}".encode()).hexdigest())
    first, second = round(len(ids) * fractions[0]), round(len(ids) * (fractions[0] + fractions[1]))
    split_of = {i: SPLITS[0 if rank < first else 1 if rank < second else 2] for rank, i in enumerate(ranked)}
    return {split: [s for s in sentences if split_of[s.id] == split] for split in SPLITS}


# ---------------------------------------------------------------------------------------------
# Turkish–German SAGT


_SENT_ID = re.compile(r"^#\s*sent_id\s*=\s*(.*?)\s*$")


def _misc(value: str) -> dict[str, str]:
    if value == "_":
        return {}
    return dict(item.split("=", 1) for item in value.split("|") if "=" in item)


def _sagt_char_tags(form: str, misc: dict[str, str], path: Path, line: int, repairs: list[str]) -> list[str]:
    csid = misc.get("CSID")
    if csid is None:
        raise DataFormatError(path, line, "token has no CSID in the MISC column")
    if csid not in (*SAGT_LABELS, MIXED):
        raise DataFormatError(path, line, f"unknown CSID {csid!r} (known: {', '.join((*SAGT_LABELS, MIXED))})")
    point = misc.get("CSPoint")
    if csid != MIXED:
        if point is not None:
            repairs.append("cspoint-on-unmixed")
        return [csid] * len(form)
    if point is None:
        raise _Skip("mixed-without-cspoint", line)
    stem, mark, suffix = point.partition(CSPOINT_MARK)
    if not mark or not stem or not suffix or CSPOINT_MARK in suffix or stem + suffix != form:
        raise _Skip("cspoint-mismatch", line)
    if TURKISH_ONLY_LETTERS & set(stem):
        repairs.append("turkish-stem")
        return ["TR"] * len(stem) + ["DE"] * len(suffix)
    return ["DE"] * len(stem) + ["TR"] * len(suffix)


def read_sagt(path: str | Path) -> tuple[list[CharTaggedSentence], RepairReport]:
    """Sentences of surface tokens with per-character languages from ``CSID``/``CSPoint``, and
    what was repaired or skipped (also logged as one warning). A token without ``CSID`` or with
    an unknown one, and any CoNLL-U structure error, raise :class:`DataFormatError`."""
    path = Path(path)
    report = RepairReport(str(path))
    sentences = []
    for rows in sentence_rows(path):
        if not rows.tokens:
            continue
        repairs: list[tuple[str, int]] = []
        try:
            char_tags = []
            for row in rows.tokens:
                kinds: list[str] = []
                char_tags.append(_sagt_char_tags(row.fields[1], _misc(row.fields[9]), path, row.line, kinds))
                repairs += [(kind, row.line) for kind in kinds]
        except _Skip as skip:
            report.add(skip.kind, skip.line)
            continue
        for kind, line in repairs:
            report.add(kind, line)
        identifier = next((m.group(1) for c in rows.comments if (m := _SENT_ID.match(c))), "")
        sentences.append(_sentence([row.fields[1] for row in rows.tokens], char_tags, f"{path}:{rows.first_line}",
                                   identifier, rows.comments))
    report.warn()
    return sentences, report
