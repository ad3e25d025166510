"""A labelled corpus by name, directory or file: its splits, task and label set."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..options import UsageError
from ..tasks import get_task
from .classification import is_classification_file, read_texts, read_tweeteval, read_wnut2020
from .conll import DataFormatError, read_conll
from .conllu import is_conllu, read_conllu
from .datasets import DATASETS, dataset_files
from .intraword import read_sagt, read_spanish_wixarika, split_by_id

#: Named datasets in a layout of their own, read by their own reader (a path -> its examples)
#: rather than by what their files look like.
OWN_READERS: dict[str, Callable[[Path], list]] = {
    "spanish-wixarika": lambda path: read_spanish_wixarika(path)[0],
    "turkish-german-sagt": lambda path: read_sagt(path)[0],
    "wnut2020": read_wnut2020,
    # TweetEval as published: hate holds empty tweets, left out with a warning (a user's own file is refused).
    **{name: functools.partial(read_tweeteval, skip_empty=True) for name in DATASETS if name.startswith("tweeteval-")},
}
# File stems recognised as each split in a data directory (TweetEval's ``val_text.txt`` too).
SPLIT_STEMS = {"train": ("train",), "dev": ("dev", "val", "valid", "validation", "testa"), "test": ("test", "testb")}


@dataclass
class Corpus:
    """The examples of each split read (``Sentence``, ``LabelledText`` or ``CharTaggedSentence``,
    as the task reads them)."""

    train: list | None
    dev: list | None
    test: list | None
    task: str
    files: dict[str, Path]
    #: Reads one of ``files`` as the task does: the test file that was not read is read by
    #: :attr:`labels`, for its label check alone.
    reader: Callable[[Path], list] | None = field(default=None, repr=False, compare=False)

    def split(self, name: str) -> list:
        """The sentences of a split that was read; a clear error when the data has none."""
        sentences = getattr(self, name)
        if sentences is None:
            raise FileNotFoundError(f"the data has no {name!r} split (found: {', '.join(self.files) or 'none'})")
        return sentences

    @functools.cached_property
    def labels(self) -> list[str]:
        """The label set training defines. Dev labels outside it are an error (model selection
        would score labels the model cannot predict); test labels outside it are a warning, one
        line per file, since training can go on but ``evaluate`` will refuse that file. A test file
        that was not read (``splits`` without ``test``, as for ``entangle train``) is read for this
        check alone."""
        task = get_task(self.task)
        labels = task.label_set(self.train)
        if self.dev:
            task.check_labels(self.dev, labels, f"the dev set {self.files['dev']}")
        test = self.test
        if test is None and self.reader is not None and self.files.get("test") not in (None, self.files.get("train")):
            try:
                test = self.reader(self.files["test"])
            except (DataFormatError, OSError, UsageError) as err:  # training goes on without the test file
                warnings.warn(f"the test set's labels were not checked: {err}", stacklevel=2)
        if test:
            unknown = task.unseen_labels(test, labels)
            if unknown:
                listed = ", ".join(f"{label!r} ({count} time{'s' if count > 1 else ''}, at {', '.join(places)}"
                                   f"{', ...' if count > len(places) else ''})"
                                   for label, (count, places) in sorted(unknown.items()))
                warnings.warn(f"the test set {self.files['test']} has {len(unknown)} label(s) that the training data "
                              f"does not have; evaluating on it will fail: {listed}", stacklevel=2)
        return labels


def split_files(data: str | Path, data_dir: str | Path | None = None) -> tuple[dict[str, Path], str | None]:
    """split -> file for a dataset name, a directory or a single file, and the dataset's task
    when it is a known name. A single file is the training file of ``train`` and the file that
    ``evaluate`` scores."""
    if str(data) in DATASETS:
        return dataset_files(str(data), data_dir), DATASETS[str(data)].task
    path = Path(data)
    if path.is_file():
        return {"train": path, "test": path}, None
    if not path.is_dir():
        raise FileNotFoundError(f"{data!s} is neither a known dataset name ({', '.join(sorted(DATASETS))}), "
                                "a directory nor a file")
    files = {}
    for split, stems in SPLIT_STEMS.items():
        # train.txt, UD-style names such as en_ewt-ud-train.conllu, TweetEval's train_text.txt, eng.train
        matches = [p for p in sorted(path.iterdir())
                   if p.is_file() and any(p.stem.lower().removesuffix("_text") == s
                                          or p.stem.lower().endswith(("-" + s, "_" + s))
                                          or p.suffix.lower() == "." + s for s in stems)]  # CoNLL-03's eng.testa
        if matches:
            files[split] = matches[0]
    if not files:
        raise FileNotFoundError(f"{path}: no train/dev/test files (expected names like train.txt, dev.txt, test.txt)")
    return files, None


def read_tagged(path: Path, token_column: int = 0, tag_column: int | None = -1, scheme: str | None = "iob2",
                conllu_tag: str = "upos", ragged: bool = False) -> list:
    """A ``.conllu`` file as CoNLL-U (its ``conllu_tag`` column), any other as CoNLL columns."""
    if is_conllu(path):
        if token_column != 0 or tag_column not in (-1, None):  # CoNLL-U's columns are fixed: say so, not ignore them
            raise UsageError(f"{path}: a CoNLL-U file's words are its FORM column and its tags UPOS or XPOS "
                             "(--conllu-tag), not --token-column/--tag-column")
        return read_conllu(path, conllu_tag if tag_column is not None else None, scheme)
    return read_conll(path, token_column, tag_column, scheme, ragged)


def read_examples(path: Path, task: str, *, token_column: int = 0, tag_column: int | None = -1,
                  conllu_tag: str = "upos", text_field: str = "text", label_field: str = "label",
                  ragged: bool = False) -> list:
    """One file's examples, read as ``task`` reads them."""
    if task == "classification":
        return read_texts(path, text_field, label_field)
    if Path(path).suffix.lower() in (".jsonl", ".json"):  # read as columns, a JSON line was one word, its own tag
        raise UsageError(f"{path}: JSON lines of texts (classification data), not {task} data of words and their labels")
    if task == "char-tagging":  # SAGT-style CoNLL-U, else the Spanish–Wixarika annotation format
        return (read_sagt if is_conllu(path) else read_spanish_wixarika)(path)[0]
    return read_tagged(path, token_column, tag_column, "iob2" if task == "ner" else None, conllu_tag, ragged)


def default_task(files: dict[str, Path]) -> str:
    """What files say about their task: ``tagging`` for CoNLL-U, ``classification`` for tables and
    TweetEval, else ``ner``."""
    if any(is_conllu(p) for p in files.values()):
        return "tagging"
    if files and all(is_classification_file(p) for p in files.values()):
        return "classification"
    return "ner"


def _overridden(files: dict[str, Path], train: str | Path | None, dev: str | Path | None,
                test: str | Path | None) -> dict[str, Path]:
    """``files`` with the splits given as files in their place."""
    return {**files, **{split: Path(p) for split, p in (("train", train), ("dev", dev), ("test", test)) if p is not None}}


def _task_of(task: str | None, dataset_task: str | None, files: dict[str, Path]) -> str:
    """``task`` if given, else the dataset's, else what the files say (:func:`default_task`)."""
    return get_task(task or dataset_task or default_task(files)).name


def data_task(data: str | Path | None = None, *, data_dir: str | Path | None = None, task: str | None = None,
               train: str | Path | None = None, dev: str | Path | None = None, test: str | Path | None = None) -> str:
    """The task ``load_corpus`` reads these files for, told without reading them (a named dataset's
    files need not be there)."""
    dataset = DATASETS.get(str(data))
    if task is not None or dataset is not None:
        return _task_of(task, dataset and dataset.task, {})
    files = split_files(data, data_dir)[0] if data is not None else {}
    return _task_of(None, None, _overridden(files, train, dev, test))


def load_corpus(data: str | Path | None = None, *, data_dir: str | Path | None = None, task: str | None = None,
                token_column: int = 0, tag_column: int | None = -1, train: str | Path | None = None,
                dev: str | Path | None = None, test: str | Path | None = None,
                splits: tuple[str, ...] = ("train", "dev", "test"), conllu_tag: str = "upos",
                text_field: str = "text", label_field: str = "label", ragged: bool = False) -> Corpus:
    """Read the ``splits`` of ``data``; ``train``/``dev``/``test`` files override its files.

    ``task`` defaults to the dataset's, else what the files say (:func:`default_task`).
    ``conllu_tag`` (``upos`` or ``xpos``) picks the tag of CoNLL-U files; ``text_field`` and
    ``label_field`` the columns of classification tables; ``ragged`` lets column files' lines have
    different numbers of columns (:func:`~entangle.data.conll.read_conll`).
    """
    files, dataset_task = split_files(data, data_dir) if data is not None else ({}, None)
    if "all" in files and (train or dev or test):
        raise UsageError(f"{data} has no published split (its one file is split by post id): give it alone, "
                         "or --train/--dev/--test files without it")
    if "all" in files:
        # No published split (one file): read it and split it by post id, the same for every user.
        if task not in (None, dataset_task):
            raise UsageError(f"{data} is a {dataset_task} dataset; it cannot be read for {task}")
        examples = split_by_id(OWN_READERS[str(data)](files["all"]))
        files = dict.fromkeys(("train", "dev", "test"), files["all"])
        read = {split: examples[split] if split in splits else None for split in ("train", "dev", "test")}
        _check_not_empty(read, files)
        return Corpus(read["train"], read["dev"], read["test"], dataset_task, files)
    own_files = set(files.values())
    files = _overridden(files, train, dev, test)
    task = _task_of(task, dataset_task, files)
    # A dataset's own layout, when it is read for its own task (SAGT's CoNLL-U also serves POS tagging).
    own_reader = OWN_READERS.get(str(data)) if task == dataset_task else None
    generic = functools.partial(read_examples, task=task, token_column=token_column, tag_column=tag_column,
                                conllu_tag=conllu_tag, text_field=text_field, label_field=label_field, ragged=ragged)

    def reader(path: Path) -> list:
        return own_reader(path) if own_reader is not None and path in own_files else generic(path)

    read = {split: reader(files[split]) if split in files and split in splits else None
            for split in ("train", "dev", "test")}
    _check_not_empty(read, files)
    return Corpus(read["train"], read["dev"], read["test"], task, files, reader)


def _check_not_empty(read: dict[str, list | None], files: dict[str, Path]) -> None:
    """A split read with nothing in it would train nothing, select on nothing or score 0 as a result."""
    for split, examples in read.items():
        if examples is not None and not examples:
            raise UsageError(f"{files[split]}: no examples in it (the {split} split)")
