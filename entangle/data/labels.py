"""The label set of the word-level tasks (the check of evaluation labels is ``Task.check_labels``)."""

from __future__ import annotations

from .conll import Sentence

TASKS = ("ner", "tagging")


class UnknownLabelError(ValueError):
    """Evaluation data holds labels the model cannot predict."""


def entity_type(tag: str) -> str | None:
    return None if tag == "O" else tag[2:]


def build_labels(sentences: list[Sentence], task: str) -> list[str]:
    """For NER, ``O`` and both ``B-``/``I-`` of every entity type seen (so a type whose ``I-``
    happens to be missing from training is still complete); otherwise the sorted tags seen."""
    tags = {tag for sentence in sentences for tag in sentence.tags}
    if task == "ner":
        types = sorted({entity_type(tag) for tag in tags} - {None})
        return ["O"] + [f"{prefix}-{name}" for name in types for prefix in "BI"]
    if task == "tagging":
        return sorted(tags)
    raise ValueError(f"unknown task {task!r}; expected one of {TASKS}")
