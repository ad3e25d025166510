"""A labelled corpus by name, directory or file: its splits, task and label set."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .conll import Sentence, read_conll
from .conllu import read_conllu
from .datasets import DATASETS, UnknownDatasetError, dataset_files
from .labels import build_labels, check_labels

# File stems recognised as each split in a data directory.
SPLIT_STEMS = {"train": ("train",), "dev": ("dev", "valid", "validation", "testa"), "test": ("test", "testb")}


@dataclass
class Corpus:
    train: list[Sentence] | None
    dev: list[Sentence] | None
    test: list[Sentence] | None
    task: str
    files: dict[str, Path]

    def split(self, name: str) -> list[Sentence]:
        """The sentences of a split that was read; a clear error when the data has none."""
        sentences = getattr(self, name)
        if sentences is None:
            raise FileNotFoundError(f"the data has no {name!r} split (found: {', '.join(self.files) or 'none'})")
        return sentences

    @property
    def labels(self) -> list[str]:
        """The label set training defines; dev and test are checked against it."""
        labels = build_labels(self.train, self.task)
        for split in ("dev", "test"):
            if getattr(self, split):
                check_labels(getattr(self, split), labels, f"the {split} set {self.files[split]}")
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
        # train.txt, or UD-style names such as en_ewt-ud-train.conllu
        matches = [p for p in sorted(path.iterdir())
                   if p.is_file() and any(p.stem.lower() == s or p.stem.lower().endswith(("-" + s, "_" + s)) for s in stems)]
        if matches:
            files[split] = matches[0]
    if not files:
        raise FileNotFoundError(f"{path}: no train/dev/test files (expected names like train.txt, dev.txt, test.txt)")
    return files, None


def read_tagged(path: Path, token_column: int = 0, tag_column: int | None = -1, scheme: str | None = "iob2",
                conllu_tag: str = "upos") -> list[Sentence]:
    """A ``.conllu`` file as CoNLL-U (its ``conllu_tag`` column), any other as CoNLL columns."""
    if Path(path).suffix.lower() == ".conllu":
        return read_conllu(path, conllu_tag if tag_column is not None else None)
    return read_conll(path, token_column, tag_column, scheme)


def load_corpus(data: str | Path | None = None, *, data_dir: str | Path | None = None, task: str | None = None,
                token_column: int = 0, tag_column: int = -1, train: str | Path | None = None,
                dev: str | Path | None = None, test: str | Path | None = None,
                splits: tuple[str, ...] = ("train", "dev", "test"), conllu_tag: str = "upos") -> Corpus:
    """Read the ``splits`` of ``data``; ``train``/``dev``/``test`` files override its files.

    ``task`` defaults to the dataset's, else ``tagging`` for CoNLL-U files (``conllu_tag``:
    ``upos`` or ``xpos``), else ``ner`` (tags are then checked as IOB2).
    """
    files, dataset_task = split_files(data, data_dir) if data is not None else ({}, None)
    files.update({split: Path(p) for split, p in (("train", train), ("dev", dev), ("test", test)) if p is not None})
    conllu = any(Path(p).suffix.lower() == ".conllu" for p in files.values())
    task = task or dataset_task or ("tagging" if conllu else "ner")
    if task == "char-tagging":
        raise UnknownDatasetError(f"{data} labels characters, not words: word-level commands cannot read it "
                                  "(entangle.data.intraword.load_intraword does)")
    scheme = "iob2" if task == "ner" else None
    read = {split: read_tagged(files[split], token_column, tag_column, scheme, conllu_tag)
            if split in files and split in splits else None for split in ("train", "dev", "test")}
    return Corpus(read["train"], read["dev"], read["test"], task, files)
