"""Readers for text classification: the TweetEval layout and generic TSV / CSV / JSON-lines tables.

A text is split into words with :func:`~entangle.data.words.split_words` (the rule ``predict``
uses on raw text), so training, evaluation and prediction see the same words.
"""

from __future__ import annotations

import csv
import io
import json
import re
import warnings
from dataclasses import dataclass
from pathlib import Path

from ..options import UsageError
from .conll import DataFormatError, decoded_lines
from .words import split_words

#: File suffixes read as tables with a text and a label column.
TABLE_SUFFIXES = (".tsv", ".csv", ".jsonl", ".json")
#: TweetEval's text files: ``{train,val,test}_text.txt`` beside ``*_labels.txt`` and ``mapping.txt``.
TWEETEVAL_SUFFIX = "_text.txt"

# csv refuses fields over 131072 characters by default; a long text is still one text. 2**31 - 1 is the
# largest limit every platform's C long holds (sys.maxsize overflows it on 64-bit Windows).
csv.field_size_limit(2**31 - 1)


@dataclass
class LabelledText:
    text: str
    words: list[str]
    label: str | None
    #: ``path:line`` of the text, for messages about it.
    source: str = ""


def is_classification_file(path: str | Path) -> bool:
    path = Path(path)
    return path.suffix.lower() in TABLE_SUFFIXES or path.name.endswith(TWEETEVAL_SUFFIX)


def _text(path: Path, number: int, text: str | None, label: str | None, with_labels: bool) -> LabelledText:
    if text is None or not split_words(text):
        raise DataFormatError(path, number, "empty text (no words to classify)")
    if with_labels and (label is None or not str(label).strip()):
        raise DataFormatError(path, number, "no label")
    return LabelledText(text, split_words(text), str(label).strip() if with_labels else None, f"{path}:{number}")


def read_tweeteval(path: str | Path, with_labels: bool = True, skip_empty: bool = False) -> list[LabelledText]:
    """``X_text.txt`` with its ``X_labels.txt`` (integers) and ``mapping.txt`` (``id<TAB>name``, in
    the task's directory or its parent, as for the stance topics); labels become class names.
    ``skip_empty`` leaves out texts without words, with one warning (the named datasets: TweetEval
    publishes hate with 7 empty training tweets and 1 empty validation tweet); else each is an error."""
    path = Path(path)
    texts = [(number, line) for number, line in decoded_lines(path)]
    if not with_labels:
        return [_text(path, number, line, None, False) for number, line in texts]
    labels_path = path.with_name(path.name[: -len(TWEETEVAL_SUFFIX)] + "_labels.txt")
    mapping_path = next((d / "mapping.txt" for d in (path.parent, path.parent.parent) if (d / "mapping.txt").is_file()), None)
    for needed, found in ((labels_path, labels_path.is_file()), (path.parent / "mapping.txt", mapping_path is not None)):
        if not found:
            raise FileNotFoundError(f"{needed}: missing (TweetEval keeps labels and the class names beside {path.name})")
    mapping = {}
    for number, line in decoded_lines(mapping_path):
        if line.strip():
            # id<TAB>name; emoji's lines go on with a description (0<TAB>❤<TAB>_red_heart_<TAB>): the
            # name is the first column after the id, so that no class name holds a tab.
            key, *names = [cell.strip() for cell in line.split("\t")]
            names = [name for name in names if name]
            if not names:
                raise DataFormatError(mapping_path, number, f"expected 'id<TAB>name', got {line!r}")
            mapping[key] = names[0]
    labels = [(number, line.strip()) for number, line in decoded_lines(labels_path)]
    if len(labels) != len(texts):
        raise DataFormatError(labels_path, min(len(labels), len(texts)) + 1,
                              f"{len(labels)} labels for the {len(texts)} texts of {path}")
    examples, empty = [], []
    for (number, line), (label_line, label) in zip(texts, labels):
        if label not in mapping:
            raise DataFormatError(labels_path, label_line, f"label {label!r} is not in {mapping_path} "
                                  f"({', '.join(mapping)})")
        if skip_empty and not split_words(line):
            empty.append(number)
            continue
        examples.append(_text(path, number, line, mapping[label], True))
    if empty:
        warnings.warn(f"{path}: {len(empty)} empty text(s) left out, as published (line(s) "
                      f"{', '.join(map(str, empty[:10]))}{', ...' if len(empty) > 10 else ''})")
    return examples


def read_table(path: str | Path, text_field: str = "text", label_field: str = "label",
               with_labels: bool = True) -> list[LabelledText]:
    """A TSV or CSV file with a header row, or JSON lines (one object per line, ``.jsonl`` or
    ``.json``), holding a text column and a label column (named ``text_field`` / ``label_field``)."""
    path = Path(path)
    if with_labels and text_field == label_field:
        raise UsageError(f"{path}: the text and the label are both the column {text_field!r}: the texts would be "
                         "their own labels (--text-field, --label-field)")
    needed = (text_field, label_field) if with_labels else (text_field,)
    lines = list(decoded_lines(path))
    read = _json_rows if path.suffix.lower() in (".jsonl", ".json") else _delimited_rows
    return [_text(path, number, row[text_field], row.get(label_field), with_labels)
            for number, row in read(path, lines, needed)]


#: What the JSON values of the text and of the label may be (a number or true/false label is read as its
#: str: 1 -> '1', true -> 'True').
_JSON_KINDS = (((str,), "a string"), ((str, int, float), "a string, a number or true/false"))


def _json_rows(path: Path, lines: list[tuple[int, str]], needed: tuple[str, ...]) -> list[tuple[int, dict]]:
    """``(line number, object)`` of each JSON line; ``needed`` (the text, then the label) checked."""
    rows = []
    for number, line in lines:
        if not line.strip():
            continue
        try:
            row = json.loads(line, parse_constant=_refuse_constant)
        except RecursionError:
            raise DataFormatError(path, number, "not valid JSON (nested too deeply)") from None
        except ValueError as err:  # JSONDecodeError, NaN, or a number of more digits than int() takes
            why = err.msg if isinstance(err, json.JSONDecodeError) else str(err)
            raise DataFormatError(path, number, f"not valid JSON ({why}; one object per line)") from None
        if not isinstance(row, dict) or any(field not in row for field in needed):
            raise DataFormatError(path, number, f"expected an object with {' and '.join(map(repr, needed))}")
        for field, (kinds, kind_name) in zip(needed, _JSON_KINDS):
            _check_json_value(path, number, field, row[field], kinds, kind_name)
        label = row.get(needed[-1]) if len(needed) > 1 else None
        if isinstance(label, float) and label.is_integer():
            row[needed[-1]] = int(label)  # 1.0 is the class 1, not a class of its own
        rows.append((number, row))
    return rows


def _refuse_constant(name: str):
    raise ValueError(f"{name} is not a label or a text")


def _check_json_value(path: Path, number: int, field: str, value, kinds: tuple[type, ...], kind_name: str) -> None:
    """JSON holds any value, and ``\\ud800`` escapes decode to lone surrogates that no encoder takes:
    both would fail far from this line. ``null`` is left to :func:`_text` (no text, no label)."""
    if value is None:
        return
    if not isinstance(value, kinds):  # a bool is an int: a true/false label is read as 'True'/'False', as ever
        raise DataFormatError(path, number, f'"{field}" must be {kind_name}, got {type(value).__name__}')
    try:
        str(value).encode("utf-8")
    except UnicodeEncodeError:
        raise DataFormatError(path, number, "not valid Unicode text (a lone surrogate)") from None


def _delimited_rows(path: Path, lines: list[tuple[int, str]], needed: tuple[str, ...]) -> list[tuple[int, dict]]:
    """``(line number, header -> cell)`` of each row of a TSV or CSV file. A TSV row is one line, its
    quotation marks text unless a csv writer quoted the whole cell (quoting would run an unbalanced
    one on into the next rows); a CSV quoted field may span lines, and the reader's line_num gives
    each row's last line."""
    tab = path.suffix.lower() == ".tsv"
    # strict: a quotation mark that opens a field and is not closed where a field ends is an error,
    # not a field that runs on over the next rows.
    reader = csv.reader(io.StringIO("\n".join(line for _, line in lines)), delimiter="\t" if tab else ",",
                        quoting=csv.QUOTE_NONE if tab else csv.QUOTE_MINIMAL, strict=True)
    text_of = _unquoted if tab else str
    row_start = 1
    try:
        header = next(reader, None)
        header = list(map(text_of, header)) if header is not None else None  # a writer quotes its cells too
        _check_header(path, header, needed)
        rows = []
        row_start = reader.line_num + 1
        for row in reader:
            if any(cell.strip() for cell in row):
                if len(row) != len(header):
                    raise DataFormatError(path, reader.line_num, f"{len(row)} columns, the header has {len(header)}")
                rows.append((reader.line_num, dict(zip(header, map(text_of, row)))))
            row_start = reader.line_num + 1
    except csv.Error as err:  # an unbalanced quotation mark
        through = f"; the row runs on to line {reader.line_num}" if reader.line_num > row_start else ""
        raise DataFormatError(path, row_start, f"not a valid {'TSV' if tab else 'CSV'} row "
                              f"({str(err).partition(' - ')[0]}{through})") from None
    return rows


#: A whole cell quoted as csv writers (pandas, Python's csv) quote one: inner quotes doubled.
_QUOTED_CELL = re.compile(r'"((?:[^"]|"")*)"')


def _unquoted(cell: str) -> str:
    """A TSV cell's text: a cell quoted whole by a csv writer loses its outer quotes and its doubled
    inner ones become single; any other quotation mark is text (``"quoted" rest`` stays as it is)."""
    quoted = _QUOTED_CELL.fullmatch(cell)
    return quoted.group(1).replace('""', '"') if quoted else cell


def _check_header(path: Path, header: list[str] | None, needed: tuple[str, ...]) -> None:
    """Each needed column once: a column named twice would be read from its last place alone."""
    if header is None:
        raise DataFormatError(path, 1, f"empty: no header line naming the columns ({', '.join(map(repr, needed))})")
    missing = [field for field in needed if field not in header]
    if missing:
        raise DataFormatError(path, 1, f"the header has no column {', '.join(map(repr, missing))} "
                              f"(found: {', '.join(header)}); choose columns with --text-field/--label-field")
    repeated = [field for field in needed if header.count(field) > 1]
    if repeated:
        raise DataFormatError(path, 1, f"the header has column {', '.join(map(repr, repeated))} more than once")


#: WNUT-2020 Task 2's columns: the training and validation files start with them, the test file does not.
WNUT2020_COLUMNS = ["Id", "Text", "Label"]
WNUT2020_LABELS = ("INFORMATIVE", "UNINFORMATIVE")


def read_wnut2020(path: str | Path, with_labels: bool = True) -> list[LabelledText]:
    """WNUT-2020 Task 2 (informative COVID-19 tweets, Nguyen et al. 2020): ``Id<TAB>Text<TAB>Label``
    per line, labels ``INFORMATIVE`` / ``UNINFORMATIVE``. Split on tabs alone: a tweet's quotation
    marks are its text (a CSV reader takes a leading one for quoting and can run on into the next lines)."""
    path = Path(path)
    examples = []
    for number, line in decoded_lines(path):
        fields = line.split("\t")
        if not line.strip() or (number == 1 and fields == WNUT2020_COLUMNS):
            continue
        if len(fields) != len(WNUT2020_COLUMNS):
            raise DataFormatError(path, number, f"expected 'Id<TAB>Text<TAB>Label', got {len(fields)} tab-separated "
                                  f"field{'s' if len(fields) > 1 else ''}")
        if with_labels and fields[2] not in WNUT2020_LABELS:
            raise DataFormatError(path, number, f"label {fields[2]!r} is not one of {', '.join(WNUT2020_LABELS)}")
        examples.append(_text(path, number, fields[1], fields[2], with_labels))
    return examples


def read_texts(path: str | Path, text_field: str = "text", label_field: str = "label",
               with_labels: bool = True) -> list[LabelledText]:
    """Any classification file: TweetEval's ``*_text.txt`` or a table."""
    if Path(path).name.endswith(TWEETEVAL_SUFFIX):
        return read_tweeteval(path, with_labels)
    return read_table(path, text_field, label_field, with_labels)
