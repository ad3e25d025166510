"""The label set of a task, and the check that evaluation data uses no label training never saw."""

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


def check_labels(sentences: list[Sentence], labels: list[str], what: str) -> None:
    """Raise with every unknown label and where it first occurs."""
    known = set(labels)
    unknown: dict[str, str] = {}
    for sentence in sentences:
        for tag in sentence.tags:
            if tag not in known and tag not in unknown:
                unknown[tag] = sentence.source
    if unknown:
        listed = ", ".join(f"{tag!r} (first in sentence at {where})" for tag, where in sorted(unknown.items()))
        raise UnknownLabelError(
            f"{what} has {len(unknown)} label(s) that are not in the training labels {labels}: {listed}"
        )
