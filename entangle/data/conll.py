"""Reader for CoNLL-style column files (WNUT-17, CoNLL-03, MasakhaNER, ...).

Every problem is reported with the file and line it comes from: malformed input raises
:class:`DataFormatError`, repairable input (``I-`` without ``B-``) is repaired with a warning.
"""

from __future__ import annotations

import codecs
import errno
import os
import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

DOCSTART = "-DOCSTART-"


class _StandardInput(str):
    """A path string that readers tell apart by identity, so a file named ``<stdin>`` is still a file."""


#: The path every reader takes as standard input (the command line's ``-``), named so in messages as
#: Python names it; read from ``sys.stdin``, not ``/dev/stdin``, which Windows does not have.
STDIN = _StandardInput("<stdin>")
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
    #: The source line of each word, for messages about one word (``None`` where a reader does not keep them).
    lines: list[int] | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if self.tags is not None and len(self.tags) != len(self.words):  # made by hand (the readers pair them)
            raise ValueError(f"{self.source or 'a sentence'}: {len(self.words)} words but {len(self.tags)} tags")

    def where(self, index: int) -> str:
        """``path:line`` of word ``index``: its own line when the reader kept it, else the sentence's first."""
        if self.lines is not None and 0 <= index < len(self.lines) and ":" in self.source:
            return f"{self.source.rpartition(':')[0]}:{self.lines[index]}"
        return self.source


#: Byte-order marks of the wide Unicode encodings (UTF-32's first: UTF-16 LE's is a prefix of it).
_WIDE_BOMS = ((codecs.BOM_UTF32_LE, "UTF-32 (little-endian)", "utf-32"), (codecs.BOM_UTF32_BE, "UTF-32 (big-endian)", "utf-32"),
              (codecs.BOM_UTF16_LE, "UTF-16 (little-endian)", "utf-16"), (codecs.BOM_UTF16_BE, "UTF-16 (big-endian)", "utf-16"))


def decoded_lines(path: str | Path):
    """``(line number, text without its line end)`` for each line of a text file.

    Lines end at ``\\n`` (or ``\\r\\n``) only: other characters that ``str.splitlines`` breaks on
    (U+000B, U+001C-U+001E, U+0085, U+2028, ...) and a carriage return alone stay inside their
    line, but a file whose lines all end with a carriage return alone (old Mac line ends, which
    would make it one line) is an error. The file is UTF-8 (a byte-order mark is skipped, also at
    the start of a later line, where joining files puts it), or UTF-16 / UTF-32 with its
    byte-order mark. Anything else, and NUL characters (binary, or wide text without a byte-order
    mark), is a :class:`DataFormatError` naming the line. ``path`` :data:`STDIN` reads standard input.
    """
    if path is not STDIN:
        data = Path(path).read_bytes()
    elif sys.stdin is None:  # closed (`0<&-`), or pythonw's
        raise OSError(errno.EBADF, "standard input is closed", STDIN)
    else:
        data = sys.stdin.buffer.read()
    for bom, name, codec in _WIDE_BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(codec)
            except UnicodeDecodeError as err:
                line = data[: err.start].decode(codec, errors="replace").count("\n") + 1
                raise DataFormatError(path, line, f"not valid {name} ({err.reason})") from None
            lines = text.split("\n")
            break
    else:
        if b"\0" in data:
            raise DataFormatError(path, data[: data.index(b"\0")].count(b"\n") + 1, "NUL bytes: not a text file "
                                  "(binary, or UTF-16/32 without its byte-order mark)")
        lines = data.removeprefix(codecs.BOM_UTF8).split(b"\n")
    if len(lines) == 1 and ("\r" if isinstance(lines[0], str) else b"\r") in lines[0][:-1]:  # no \n at all
        raise DataFormatError(path, 1, "lines end with a carriage return alone (old Mac line ends), which would make "
                                       "the file one line: convert them to \\n")
    if lines and not lines[-1]:
        lines.pop()  # the end of the last line, not a line
    for number, line in enumerate(lines, start=1):
        if isinstance(line, bytes):
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as err:
                raise DataFormatError(path, number, f"not valid UTF-8 ({err.reason} at byte {err.start}); text files "
                                                    "must be UTF-8, or UTF-16/32 with a byte-order mark") from None
        line = line.removesuffix("\r").removeprefix("\ufeff")
        if "\0" in line:
            raise DataFormatError(path, number, "NUL characters: not text")
        yield number, line


def read_conll(
    path: str | Path,
    token_column: int = 0,
    tag_column: int | None = -1,
    scheme: str | None = "iob2",
    ragged: bool = False,
) -> list[Sentence]:
    """Read sentences from a column file.

    Columns are tab-separated if the first data line holds a tab, otherwise separated by runs of
    spaces; each column is read without its surrounding whitespace. Every data line must have that
    line's number of columns, unless ``ragged``: then each line's own columns are indexed (with the
    defaults, its first column is the token and its last the tag), for files such as CharBERT's
    CharAttack sets, where a perturbed token may hold a space. The token and the tag must be two
    different columns. Lines holding only whitespace end a sentence; ``-DOCSTART-`` lines are skipped.
    ``tag_column=None`` reads words only (for tagging new text); ``scheme="iob2"`` checks tags as
    NER tags.
    """
    sentences: list[Sentence] = []
    words: list[str] = []
    tags: list[str] = []
    lines: list[int] = []
    separator: str | None = None
    n_columns = 0
    columns_line = 0
    repaired: list[int] = []

    def close_sentence():
        nonlocal words, tags, lines
        if words:
            sentences.append(Sentence(words, tags if tag_column is not None else None, f"{path}:{lines[0]}",
                                      lines=lines))
        words, tags, lines = [], [], []

    for number, line in decoded_lines(path):
        if not line.strip() or _is_docstart(line):
            close_sentence()
            continue
        if separator is None:
            separator = "\t" if "\t" in line else " "
            n_columns = len(_split(line, separator))
            columns_line = number
            for name, column in (("token", token_column), ("tag", tag_column)):
                if column is not None and not -n_columns <= column < n_columns:
                    raise DataFormatError(path, number, f"the {name} column {column} does not exist: lines have {n_columns} columns")
            # Ragged files check each line's own columns below.
            if not ragged and tag_column is not None and token_column % n_columns == tag_column % n_columns:
                raise DataFormatError(path, number, f"the token column {token_column} and the tag column "
                                                    f"{tag_column} are the same column (lines have {n_columns} "
                                                    "columns): the words would be the tags")
        # Tab-separated columns keep their spaces ("NOUN " beside "NOUN"): drop them.
        fields = [column.strip() for column in _split(line, separator)]
        columns = [c for c in (token_column, tag_column) if c is not None]
        if ragged and (any(not -len(fields) <= c < len(fields) for c in columns)
                       or len({c % len(fields) for c in columns}) < len(columns)):  # token and tag: two columns
            raise DataFormatError(path, number, f"{len(fields)} column(s): too few for token column {token_column} "
                                                f"and tag column {tag_column}")
        if len(fields) != n_columns and not ragged:
            raise DataFormatError(
                path, number, f"expected {n_columns} columns (as on line {columns_line}), found {len(fields)}: {line!r} "
                "(--ragged-columns reads each line's own first and last columns)"
            )
        word = fields[token_column]
        if not word:
            raise DataFormatError(path, number, "empty token")
        words.append(word)
        lines.append(number)
        if tag_column is not None:
            tag = fields[tag_column]
            if not tag:
                raise DataFormatError(path, number, f"empty tag in column {tag_column} (a tab at the end of the line?)")
            if scheme == "iob2":
                tag = _check_iob2(tag, tags[-1] if tags else "O", path, number, repaired)
            tags.append(tag)
    close_sentence()
    warn_repaired(path, repaired)
    return sentences


def check_iob2_tags(tags: list[str], lines: list[int], path: Path, repaired: list[int]) -> list[str]:
    """A sentence's tags checked as IOB2, an I- that starts an entity repaired to B- (its line kept in ``repaired``)."""
    checked: list[str] = []
    for tag, line in zip(tags, lines):
        checked.append(_check_iob2(tag, checked[-1] if checked else "O", path, line, repaired))
    return checked


def warn_repaired(path: Path, repaired: list[int]) -> None:
    """One warning for a file's repaired I- tags, naming their lines."""
    if repaired:
        shown = ", ".join(map(str, repaired[:10])) + (" ..." if len(repaired) > 10 else "")
        warnings.warn(
            f"{path}: repaired {len(repaired)} I- tag(s) without a preceding B- or I- of the same type "
            f"to B- (lines {shown})",
            stacklevel=3,
        )


def _is_docstart(line: str) -> bool:
    """A document break (``-DOCSTART- -X- -X- O``): skipped whatever its columns, so that it does not
    set the file's separator or number of columns."""
    return line.split(None, 1)[0] == DOCSTART


#: A column of a space-separated file: a run of anything but ASCII spaces (``str.split()`` would
#: also split a word at a no-break space, U+202F or U+2028, and lose half of it in a ragged file).
_SPACED_CELL = re.compile(r"[^ \t\f\v]+")


def _cells(line: str, separator: str) -> list[tuple[int, int]]:
    """Where each column of ``line`` is, ``(start, stop)``: between tabs, or between runs of ASCII spaces."""
    if separator != "\t":
        return [m.span() for m in _SPACED_CELL.finditer(line)]
    starts = [0] + [i + 1 for i, char in enumerate(line) if char == "\t"]
    return [(start, start + len(cell)) for start, cell in zip(starts, line.split("\t"))]


def _split(line: str, separator: str) -> list[str]:
    """The columns of ``line``, as :func:`_cells` places them."""
    return line.split("\t") if separator == "\t" else _SPACED_CELL.findall(line)


def _check_iob2(tag: str, previous: str, path: Path, line: int, repaired: list[int]) -> str:
    if not IOB2_TAG.match(tag):
        raise DataFormatError(path, line, f"{tag!r} is not a valid IOB2 tag (expected O, B-TYPE or I-TYPE)")
    if tag.startswith("I-") and previous[2:] != tag[2:]:
        repaired.append(line)
        return "B-" + tag[2:]
    return tag


@contextmanager
def replacing(path: Path, out_path: str | Path) -> Iterator[TextIO]:
    """The text file to write ``out_path`` through. Where ``out_path`` is ``path``, which the writer
    reads as it writes, a file beside it that replaces it once written whole: opened directly it
    would be emptied before it is read, and a failed write would leave it cut short."""
    out_path = Path(out_path)
    in_place = out_path.exists() and out_path.samefile(path)
    target = out_path.with_name(out_path.name + ".partial") if in_place else out_path
    try:
        with open(target, "w", encoding="utf-8", newline="") as out:
            yield out
    except BaseException:
        if in_place:
            target.unlink(missing_ok=True)
        raise
    if in_place:
        os.replace(target, out_path)


def rewrite_tokens(path: str | Path, out_path: str | Path, new_words: list[str], token_column: int = 0,
                   ragged: bool = False) -> None:
    """Copy a column file, replacing its words (in reading order) by ``new_words``: only each word's
    own characters change; every other column, the spacing that aligns them, the ``-DOCSTART-``
    lines, the sentence breaks, a UTF-8 byte-order mark, CRLF line ends and a missing final line end
    stay as they were. ``out_path`` may be ``path`` itself (:func:`replacing`). ``ragged``: as
    :func:`read_conll` reads it."""
    path = Path(path)
    read_conll(path, token_column, tag_column=None, ragged=ragged)  # validates the file, with file:line errors
    raw = path.read_bytes()
    first_end = raw.find(b"\n")
    end = "\r\n" if first_end > 0 and raw[first_end - 1 : first_end] == b"\r" else "\n"
    lines = list(decoded_lines(path))
    words = iter(new_words)
    separator = None
    with replacing(path, out_path) as out:
        out.write("\ufeff" if raw.startswith(codecs.BOM_UTF8) else "")
        for number, line in lines:
            if line.strip() and not _is_docstart(line):  # as read_conll reads it
                separator = separator or ("\t" if "\t" in line else " ")
                if (word := next(words, None)) is None:
                    raise ValueError(f"{path}: fewer replacement words than words in the file")
                start, stop = _token_span(line, separator, token_column)
                line = line[:start] + word + line[stop:]
            out.write(line + (end if number < len(lines) or raw.endswith(b"\n") else ""))
    if next(words, None) is not None:
        raise ValueError(f"{path}: more replacement words than words in the file")


def _token_span(line: str, separator: str, column: int) -> tuple[int, int]:
    """Where the token of ``column`` is in ``line``, without the spaces around it in its cell."""
    start, stop = _cells(line, separator)[column]
    cell = line[start:stop]
    return start + len(cell) - len(cell.lstrip()), stop - len(cell) + len(cell.rstrip())
