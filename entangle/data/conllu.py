"""CoNLL-U (Universal Dependencies) as tagging data: words and their UPOS (or XPOS) tags.

The words are the format's *syntactic words* (integer IDs), the units UD annotates. A
multi-word token line (``3-4 del``) only gives the surface form of words 3 and 4; empty nodes
(``5.1``) belong to enhanced dependencies. Neither is a word to tag, both are kept when a file
is written back with predicted tags, as are comments (``# text = ...``). Readers that label
the text as written (intra-word language IDs) take the surface tokens of :func:`sentence_rows`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .conll import DataFormatError, Sentence, check_iob2_tags, decoded_lines, replacing, warn_repaired

#: Tag columns a CoNLL-U file offers (0-based column index).
TAG_FIELDS = {"upos": 3, "xpos": 4}
N_COLUMNS = 10
# IDs are ASCII digits (``\d`` would also take other scripts' digits, which ``int`` reads).
# At most 9 digits: a longer ID is out of sequence in any real sentence, and int() refuses over 4300.
_WORD_ID = re.compile(r"[0-9]{1,9}")
_RANGE = re.compile(r"^([0-9]{1,9})-([0-9]{1,9})$")
_EMPTY_NODE = re.compile(r"^[0-9]+\.[0-9]+$")


def is_conllu(path: str | Path) -> bool:
    """Whether a file is read (and written) as CoNLL-U: by its ``.conllu`` suffix, the one rule
    every reader and writer of data files follows."""
    return Path(path).suffix.lower() == ".conllu"


def _blocks(path: str | Path):
    """Sentences as lists of ``(line number, line)``, comments included."""
    block = []
    for number, line in decoded_lines(path):
        if line.strip():
            block.append((number, line))
        elif block:
            yield block
            block = []
    if block:
        yield block


@dataclass
class Row:
    line: int
    fields: list[str]


@dataclass
class SentenceRows:
    """One sentence's validated lines."""

    first_line: int
    comments: list[str]
    #: syntactic words (integer IDs), the units UD annotates
    words: list[Row]
    #: surface tokens, the text as written: multi-word token lines and the words outside them
    tokens: list[Row]


def sentence_rows(path: str | Path) -> Iterator[SentenceRows]:
    """Sentences of a CoNLL-U file with the ID sequence and ranges checked; empty nodes dropped."""
    for block in _blocks(path):
        rows = SentenceRows(block[0][0], [], [], [])
        expected, range_end = 1, 0
        for number, line in block:
            if line.startswith("#"):
                rows.comments.append(line)
                continue
            fields = line.split("\t")
            if len(fields) != N_COLUMNS:
                raise DataFormatError(path, number, f"expected {N_COLUMNS} tab-separated columns, found {len(fields)}")
            identifier = fields[0]
            if _EMPTY_NODE.match(identifier):
                continue
            if match := _RANGE.match(identifier):
                first, last = map(int, match.groups())
                if first != expected or last <= first:
                    raise DataFormatError(path, number, f"multi-word token {identifier} does not cover the next words "
                                                        f"(expected a range starting at {expected})")
                if not fields[1].strip():
                    raise DataFormatError(path, number, "empty token form")
                range_end = last
                rows.tokens.append(Row(number, fields))
                continue
            if not _WORD_ID.fullmatch(identifier) or int(identifier) != expected:
                raise DataFormatError(path, number, f"word ID {identifier!r} out of sequence (expected {expected})")
            if not fields[1].strip():
                raise DataFormatError(path, number, "empty word form")
            rows.words.append(Row(number, fields))
            if expected > range_end:
                rows.tokens.append(Row(number, fields))
            expected += 1
        if range_end >= expected:
            raise DataFormatError(path, block[-1][0], f"multi-word token range ends at {range_end} but the sentence "
                                                      f"has {expected - 1} words")
        yield rows


def read_conllu(path: str | Path, tag: str | None = "upos", scheme: str | None = None) -> list[Sentence]:
    """Sentences of syntactic words with their ``tag`` (``upos``/``xpos``; ``None``: words only);
    ``scheme="iob2"`` checks and repairs the tags as :func:`~entangle.data.conll.read_conll` does
    (entity tags kept in a CoNLL-U column). Spaces around a form or tag are dropped ("NOUN " is "NOUN")."""
    if tag is not None and tag not in TAG_FIELDS:
        raise ValueError(f"tag must be one of {', '.join(TAG_FIELDS)}, got {tag!r}")
    sentences, repaired = [], []
    for rows in sentence_rows(path):
        if not rows.words:
            continue
        tags = None
        lines = [row.line for row in rows.words]
        if tag is not None:
            tags = [row.fields[TAG_FIELDS[tag]].strip() for row in rows.words]
            for row, value in zip(rows.words, tags):
                if value in ("", "_"):
                    raise DataFormatError(path, row.line, f"word {row.fields[0]} has no {tag.upper()} ('{value}')")
            if scheme == "iob2":
                tags = check_iob2_tags(tags, lines, path, repaired)
        sentences.append(Sentence([row.fields[1].strip() for row in rows.words], tags, f"{path}:{rows.first_line}",
                                  rows.comments, lines=lines))
    warn_repaired(path, repaired)
    return sentences


def write_conllu(path: str | Path, out_path: str | Path, values: list[list[str]], field: str = "upos") -> None:
    """Copy a CoNLL-U file with ``values`` (per sentence, per syntactic word) in column ``field``
    (``form``, ``upos`` or ``xpos``); comments, multi-word tokens, empty nodes and every other
    column stay as they were, except a ``# text`` comment, rebuilt from the new forms where they
    differ. Written as the format asks (UTF-8, no byte-order mark, LF line ends, one blank line after
    each sentence), whatever the input's: CoNLL-U tools expect that, unlike CoNLL files' readers,
    whose copies keep their input's (:func:`~entangle.data.conll.rewrite_tokens`). ``out_path`` may
    be ``path`` itself (:func:`~entangle.data.conll.replacing`)."""
    path = Path(path)
    sentences = read_conllu(path, tag=None)  # validates, with file:line errors
    if [len(s.words) for s in sentences] != [len(t) for t in values]:
        raise ValueError(f"{path}: the new values do not match the file's sentences and words")
    column = {"form": 1, **TAG_FIELDS}[field]
    per_sentence = iter(values)
    with replacing(path, out_path) as out:
        for block in _blocks(path):
            has_words = any(_WORD_ID.fullmatch(line.split("\t")[0]) for _, line in block if not line.startswith("#"))
            words = iter(next(per_sentence) if has_words else ())  # a block of comments only is copied as is
            rows = [line.split("\t") if not line.startswith("#") else [line] for _, line in block]
            changed = False
            for fields in rows:
                if len(fields) > 1 and _WORD_ID.fullmatch(fields[0]):
                    value = next(words)
                    changed |= fields[column] != value
                    fields[column] = value
            if field == "form" and changed:  # new words: the sentence's text is theirs now
                text = _surface_text([fields for fields in rows if len(fields) > 1])
                rows = [[f"# text = {text}"] if _is_text_comment(fields) else fields for fields in rows]
            out.write("".join("\t".join(fields) + "\n" for fields in rows) + "\n")


def _is_text_comment(fields: list[str]) -> bool:
    return len(fields) == 1 and fields[0][1:].lstrip().partition("=")[0].strip() == "text"


def _surface_text(rows: list[list[str]]) -> str:
    """A sentence's text from its tokens, as UD writes ``# text``: each multi-word token's surface
    form (not its words), every other word's form, then a space unless MISC says ``SpaceAfter=No``."""
    text, covered = [], 0
    for fields in rows:
        if span := _RANGE.fullmatch(fields[0]):
            covered = int(span.group(2))
        elif not (_WORD_ID.fullmatch(fields[0]) and int(fields[0]) > covered):
            continue  # an empty node, or a word of a multi-word token
        text += [fields[1], "" if "SpaceAfter=No" in fields[9].split("|") else " "]
    return "".join(text[:-1])
