"""CoNLL-U (Universal Dependencies) as tagging data: words and their UPOS (or XPOS) tags.

The words are the format's *syntactic words* (integer IDs), the units UD annotates. A
multi-word token line (``3-4 del``) only gives the surface form of words 3 and 4; empty nodes
(``5.1``) belong to enhanced dependencies. Neither is a word to tag, both are kept when a file
is written back with predicted tags, as are comments (``# text = ...``).
"""

from __future__ import annotations

import re
from pathlib import Path

from .conll import DataFormatError, Sentence, decoded_lines

#: Tag columns a CoNLL-U file offers (0-based column index).
TAG_FIELDS = {"upos": 3, "xpos": 4}
N_COLUMNS = 10
_RANGE = re.compile(r"^(\d+)-(\d+)$")
_EMPTY_NODE = re.compile(r"^\d+\.\d+$")


def _blocks(path: Path):
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


def read_conllu(path: str | Path, tag: str | None = "upos") -> list[Sentence]:
    """Sentences of syntactic words with their ``tag`` (``upos``/``xpos``; ``None``: words only)."""
    path = Path(path)
    if tag is not None and tag not in TAG_FIELDS:
        raise ValueError(f"tag must be one of {', '.join(TAG_FIELDS)}, got {tag!r}")
    sentences = []
    for block in _blocks(path):
        words, tags, comments = [], [], []
        expected, range_end = 1, 0
        for number, line in block:
            if line.startswith("#"):
                comments.append(line)
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
                range_end = last
                continue
            if not identifier.isdigit() or int(identifier) != expected:
                raise DataFormatError(path, number, f"word ID {identifier!r} out of sequence (expected {expected})")
            if not fields[1].strip():
                raise DataFormatError(path, number, "empty word form")
            words.append(fields[1])
            if tag is not None:
                value = fields[TAG_FIELDS[tag]]
                if value in ("", "_"):
                    raise DataFormatError(path, number, f"word {identifier} has no {tag.upper()} ('{value}')")
                tags.append(value)
            expected += 1
        if range_end >= expected:
            raise DataFormatError(path, block[-1][0], f"multi-word token range ends at {range_end} but the sentence "
                                                      f"has {expected - 1} words")
        if words:
            sentences.append(Sentence(words, tags if tag is not None else None, f"{path}:{block[0][0]}", comments))
    return sentences


def write_conllu(path: str | Path, out_path: str | Path, values: list[list[str]], field: str = "upos") -> None:
    """Copy a CoNLL-U file with ``values`` (per sentence, per syntactic word) in column ``field``
    (``form``, ``upos`` or ``xpos``); comments, multi-word tokens, empty nodes and every other
    column stay as they were."""
    path = Path(path)
    sentences = read_conllu(path, tag=None)  # validates, with file:line errors
    if [len(s.words) for s in sentences] != [len(t) for t in values]:
        raise ValueError(f"{path}: the new values do not match the file's sentences and words")
    column = {"form": 1, **TAG_FIELDS}[field]
    per_sentence = iter(values)
    with open(out_path, "w", encoding="utf-8", newline="") as out:
        for block in _blocks(path):
            has_words = any(line.split("\t")[0].isdigit() for _, line in block if not line.startswith("#"))
            words = iter(next(per_sentence) if has_words else ())  # a block of comments only is copied as is
            for _, line in block:
                fields = line.split("\t")
                if not line.startswith("#") and fields[0].isdigit():
                    fields[column] = next(words)
                out.write("\t".join(fields) + "\n")
            out.write("\n")
