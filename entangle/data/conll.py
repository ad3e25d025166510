"""Reader for CoNLL-style column files (WNUT-17, CoNLL-03, MasakhaNER, ...).

Every problem is reported with the file and line it comes from: malformed input raises
:class:`DataFormatError`, repairable input (``I-`` without ``B-``) is repaired with a warning.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path

DOCSTART = "-DOCSTART-"
IOB2_TAG = re.compile(r"^(O|[BI]-\S+)$")


class DataFormatError(ValueError):
    """Input that cannot be read; the message starts with ``path:line:``."""

    def __init__(self, path: str | Path, line: int, message: str):
        super().__init__(f"{path}:{line}: {message}")
        self.path, self.line = str(path), line


@dataclass
class Sentence:
    words: list[str]
    tags: list[str] | None = None
    #: ``path:line`` of the sentence's first word, for messages about it.
    source: str = ""
    #: Comment lines of formats that have them (CoNLL-U), kept for output.
    comments: list[str] = field(default_factory=list)


def decoded_lines(path: Path):
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(path, number, f"not valid UTF-8 ({err.reason} at byte {err.start})") from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield number, text.rstrip("\r\n")


def read_conll(
    path: str | Path,
    token_column: int = 0,
    tag_column: int | None = -1,
    scheme: str | None = "iob2",
) -> list[Sentence]:
    """Read sentences from a column file.

    Columns are tab-separated if the first data line holds a tab, otherwise separated by runs of
    spaces; every data line must have that line's number of columns. Lines holding only
    whitespace end a sentence; ``-DOCSTART-`` lines are skipped. ``tag_column=None`` reads words
    only (for tagging new text); ``scheme="iob2"`` checks tags as NER tags.
    """
    path = Path(path)
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    first_line = 0
    separator: str | None = None
    n_columns = 0
    columns_line = 0
    repaired: list[int] = []

    def close_sentence():
        nonlocal words, tags
        if words:
            sentences.append(Sentence(words, tags if tag_column is not None else None, f"{path}:{first_line}"))
        words, tags = [], []

    for number, line in decoded_lines(path):
        if not line.strip():
            close_sentence()
            continue
        if separator is None:
            separator = "\t" if "\t" in line else " "
            n_columns = len(_split(line, separator))
            columns_line = number
            for name, column in (("token", token_column), ("tag", tag_column)):
                if column is not None and not -n_columns <= column < n_columns:
                    raise DataFormatError(path, number, f"the {name} column {column} does not exist: lines have {n_columns} columns")
        fields = _split(line, separator)
        if fields[0] == DOCSTART:
            close_sentence()
            continue
        if len(fields) != n_columns:
            raise DataFormatError(
                path, number, f"expected {n_columns} columns (as on line {columns_line}), found {len(fields)}: {line!r}"
            )
        word = fields[token_column]
        if not word.strip():
            raise DataFormatError(path, number, "empty token")
        if not words:
            first_line = number
        words.append(word)
        if tag_column is not None:
            tag = fields[tag_column]
            if scheme == "iob2":
                tag = _check_iob2(tag, tags[-1] if tags else "O", path, number, repaired)
            tags.append(tag)
    close_sentence()
    if repaired:
        shown = ", ".join(map(str, repaired[:10])) + (" ..." if len(repaired) > 10 else "")
        warnings.warn(
            f"{path}: repaired {len(repaired)} I- tag(s) without a preceding B- or I- of the same type "
            f"to B- (lines {shown})",
            stacklevel=2,
        )
    return sentences


def _split(line: str, separator: str) -> list[str]:
    return line.split("\t") if separator == "\t" else line.split()


def _check_iob2(tag: str, previous: str, path: Path, line: int, repaired: list[int]) -> str:
    if not IOB2_TAG.match(tag):
        raise DataFormatError(path, line, f"{tag!r} is not a valid IOB2 tag (expected O, B-TYPE or I-TYPE)")
    if tag.startswith("I-") and previous[2:] != tag[2:]:
        repaired.append(line)
        return "B-" + tag[2:]
    return tag


def rewrite_tokens(path: str | Path, out_path: str | Path, new_words: list[str], token_column: int = 0) -> None:
    """Copy a column file, replacing its words (in reading order) by ``new_words``: every other
    column, the ``-DOCSTART-`` lines and the sentence breaks stay as they were."""
    path = Path(path)
    read_conll(path, token_column, tag_column=None)  # validates the file, with file:line errors
    words = iter(new_words)
    separator = None
    with open(out_path, "w", encoding="utf-8", newline="") as out:
        for _, line in decoded_lines(path):
            if line.strip():
                separator = separator or ("\t" if "\t" in line else " ")
                fields = _split(line, separator)
                if fields[0] != DOCSTART:
                    fields[token_column] = next(words)
                    line = separator.join(fields)
            out.write(line + "\n")
    if next(words, None) is not None:
        raise ValueError(f"{path}: more replacement words than words in the file")
