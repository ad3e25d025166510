"""Unlabelled text for pretraining: raw text files (one text per line) or the training split of a
labelled dataset. Nothing else is read, so dev and test text never leak into pretraining."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .conll import decoded_lines
from .words import split_words


class NoTextError(ValueError):
    """A pretraining source (or the whole corpus) without any text."""


@dataclass
class TextSource:
    """Where texts came from and how much, for the record a pretraining run keeps."""

    source: str
    texts: int
    words: int
    characters: int


@dataclass
class RawCorpus:
    texts: list[list[str]] = field(default_factory=list)  # words of each text
    sources: list[TextSource] = field(default_factory=list)

    def add(self, source: str, texts: list[list[str]]) -> None:
        if not texts:
            raise NoTextError(f"{source}: no text in it")
        self.texts.extend(texts)
        self.sources.append(TextSource(source, len(texts), sum(map(len, texts)),
                                       sum(len(w) for t in texts for w in t)))


def read_text_file(path: str | Path) -> list[list[str]]:
    """One text per line with words, split into words the way ``entangle predict`` splits text (a
    line of spaces and invisible characters only, which predict answers with no words, is skipped)."""
    return [words for _, line in decoded_lines(path) if (words := split_words(line))]


def read_raw_corpus(text_files: list[str] = (), datasets: list[str] = (), data_dir: str | None = None) -> RawCorpus:
    """Texts of ``text_files`` and the *training* split of each dataset in ``datasets``."""
    from .corpus import load_corpus  # corpus readers split texts with split_words, defined here

    corpus = RawCorpus()
    for path in text_files:
        corpus.add(str(path), read_text_file(path))
    for name in datasets:
        data = load_corpus(name, data_dir=data_dir, splits=("train",))
        corpus.add(f"{data.files['train']} (train split of {name})", [s.words for s in data.split("train")])
    if not corpus.texts:
        raise NoTextError("no pretraining text: give --text FILE and/or --data DATASET")
    return corpus
