"""Tasks as units: what a label belongs to, how gold labels are read off an example, the label
set, and the metric.

Every task labels *units* of an example, and everything else follows from which unit:

- ``word`` (NER, POS tagging): a label per word, read at the word's first subword / character;
- ``char`` (intra-word code-switching): a label per character, read at every character of
  every word, from the character side only (a subword cannot be split by a boundary inside it);
- ``text`` (classification): one label per text, read at the first position of a side (the
  subword side's ``[CLS]``-like token, the character side's start marker) through
  dense → tanh → linear.

The featurizer, the model's heads, the trainer and the :class:`~entangle.predict.Tagger` ask the
task rather than branching on its name.
"""

from __future__ import annotations

import os
from typing import Any, Protocol

from .data.conll import IOB2_TAG
from .data.labels import UnknownLabelError, build_labels
from .decoding import DECODINGS, argmax_decode, iob2_viterbi
from .metrics import (accuracy_counts, accuracy_of_counts, char_accuracy, class_counts, classification_scores,
                      entity_counts, entity_scores, f1_of_counts, macro_f1_of_counts, token_accuracy)

UNITS = ("word", "char", "text")


class Example(Protocol):
    words: list[str]
    source: str


class Task:
    """One task family. Subclasses say how to read the gold labels of an example."""

    name: str
    unit: str
    main_score: str
    #: Sides that can predict this task's labels.
    sides: tuple[str, ...] = ("subword", "char")
    #: Whether some label sequences are invalid (IOB2), so constrained decoding differs from argmax.
    has_label_grammar: bool = False
    #: The learning rate of the new parts (``--new-lr``) unless told: chosen on NER (WNUT-17).
    new_lr: float = 5e-4
    description: str
    #: The examples the task trains on and scores, for messages.
    example_kind: str = "entangle.data.conll.Sentence with tags"

    def gold(self, example: Any) -> list[str]:
        """The example's labels, one per unit (words: per word; chars: every character of every
        word in order; text: a list of one)."""
        raise NotImplementedError

    def label_set(self, examples: list) -> list[str]:
        return sorted({label for example in examples for label in self.gold(example)})

    def decode(self, probabilities, labels: list[str], decoding: str = "constrained"
               ) -> tuple[list[str], list[float]]:
        """An example's labels from its ``(n_units, n_labels)`` probabilities, and the probability of
        each chosen label. ``decoding="constrained"`` keeps the task's label grammar where it has one
        (IOB2 for NER); ``"argmax"`` takes each unit's most probable label on its own."""
        if decoding not in DECODINGS:
            raise ValueError(f"decoding must be one of {', '.join(DECODINGS)}, got {decoding!r}")
        index, best = self._constrained(probabilities, labels) if decoding == "constrained" else argmax_decode(probabilities)
        return [labels[i] for i in index], best

    def _constrained(self, probabilities, labels: list[str]) -> tuple[list[int], list[float]]:
        return argmax_decode(probabilities)  # no label grammar: each unit on its own

    def score(self, examples: list, predicted: list[list[str]]) -> dict:
        raise NotImplementedError

    def example_counts(self, gold: list[list[str]], predicted: list[list[str]]) -> list:
        """Per example (gold and predicted labels as :meth:`gold` lists them), what the main score
        adds up over a corpus: a paired bootstrap resamples these. Here: units right, units."""
        return accuracy_counts(gold, predicted)

    def score_of_counts(self, counts: list) -> float:
        """The main score of the examples whose :meth:`example_counts` these are."""
        return accuracy_of_counts(counts)

    def check_examples(self, examples: list, what: str) -> None:
        """One clear line for what cannot be trained on or scored: not a list (a file's name: the
        readers, e.g. ``load_corpus``, make the list), no examples, an example of another kind or
        without labels, nothing to label in any example, or (a label per text) a text without words."""
        if isinstance(examples, (str, bytes, os.PathLike)) or not isinstance(examples, (list, tuple)):
            raise ValueError(f"{what}: a list of labelled examples is expected (entangle.load_corpus reads a "
                             f"file into one), got {type(examples).__name__}")
        if not examples:
            raise ValueError(f"{what}: no examples")
        for number, example in enumerate(examples):
            place = getattr(example, "source", "") or f"example {number}"
            try:
                gold = self.gold(example)
            except (AttributeError, TypeError):
                gold = None
            if gold is None or not all(isinstance(label, str) for label in gold):
                raise ValueError(f"{what}: {place} is not a labelled example of task {self.name} ({self.example_kind}): "
                                 f"got {type(example).__name__}" + ("" if gold is None else " without labels"))
            if self.unit == "text" and not example.words:
                raise ValueError(f"{what}: {place} has no words: there is nothing to classify")
        if not any(self.units(example.words) for example in examples):
            raise ValueError(f"{what}: no example has a word to label")

    def check_labels(self, examples: list, labels: list[str], what: str) -> None:
        """Raise with every label the model cannot predict and where it first occurs (``path:line``
        of the word itself where the reader kept word lines, else of the example); first
        :meth:`check_examples`."""
        self.check_examples(examples, what)
        unknown = self.unseen_labels(examples, labels)
        if unknown:
            listed = ", ".join(f"{label!r} (first at {places[0]})" for label, (_, places) in sorted(unknown.items()))
            raise UnknownLabelError(f"{what} has {len(unknown)} label(s) that are not in the training labels "
                                    f"{labels}: {listed}")

    def unseen_labels(self, examples: list, labels: list[str], places: int = 3) -> dict[str, tuple[int, list[str]]]:
        """``{label: (occurrences, the first places it occurs)}`` for every gold label not in ``labels``."""
        known = set(labels)
        unknown: dict[str, tuple[int, list[str]]] = {}
        for number, example in enumerate(examples):
            for index, label in enumerate(self.gold(example)):
                if label not in known:
                    count, where = unknown.get(label, (0, []))
                    place = example.where(index) if self.unit == "word" and hasattr(example, "where") else example.source
                    place = place or f"example {number}"  # made in memory: no file to name
                    if len(where) < places and place not in where:
                        where.append(place)
                    unknown[label] = (count + 1, where)
        return unknown

    def check_label_set(self, labels) -> None:
        """A model's labels, given by hand (``Tagger.create``; the command line builds them from the
        data): distinct strings, at least one, and valid for the task's grammar."""
        if isinstance(labels, str) or not isinstance(labels, (list, tuple)) or not labels:
            raise ValueError(f"labels must be a non-empty list of label names, got {labels!r}")
        if not all(isinstance(label, str) and label for label in labels):
            raise ValueError(f"labels must be non-empty strings, got {labels!r}")
        if broken := [label for label in labels if any(c in label for c in "\t\n\r")]:  # one output line per unit
            raise ValueError(f"labels must not hold tabs or line breaks, got {broken!r}")
        if repeated := sorted({label for label in labels if labels.count(label) > 1}):
            raise ValueError(f"labels must be distinct; repeated: {', '.join(repeated)}")

    def units(self, words: list[str]) -> int:
        """How many labels an example with these words has."""
        return {"word": len(words), "char": sum(len(w) for w in words), "text": 1}[self.unit]


class NerTask(Task):
    name, unit, main_score = "ner", "word", "f1"
    has_label_grammar = True
    description = "named entities as IOB2 word tags; entity P/R/F1 (seqeval, strict)"

    def gold(self, example) -> list[str]:
        return example.tags

    def label_set(self, examples: list) -> list[str]:
        return build_labels(examples, self.name)

    def check_label_set(self, labels) -> None:
        super().check_label_set(labels)
        if self.has_label_grammar and ("O" not in labels or not all(IOB2_TAG.match(label) for label in labels)):
            raise ValueError(f"NER labels are IOB2 tags with O among them (O, B-TYPE, I-TYPE), got {labels!r}")

    def score(self, examples: list, predicted: list[list[str]]) -> dict:
        return entity_scores([self.gold(e) for e in examples], predicted)

    def _constrained(self, probabilities, labels: list[str]) -> tuple[list[int], list[float]]:
        return iob2_viterbi(probabilities, labels)

    def example_counts(self, gold: list[list[str]], predicted: list[list[str]]) -> list:
        return entity_counts(gold, predicted)

    def score_of_counts(self, counts: list) -> float:
        return f1_of_counts(counts)


class TaggingTask(NerTask):
    """Word tags of any tag set: the NER task's reading and labels, scored by token accuracy."""

    name, unit, main_score = "tagging", "word", "accuracy"
    has_label_grammar = False
    description = "any tag per word (e.g. POS); token accuracy"

    def score(self, examples: list, predicted: list[list[str]]) -> dict:
        return {"accuracy": token_accuracy([self.gold(e) for e in examples], predicted)}

    def _constrained(self, probabilities, labels: list[str]) -> tuple[list[int], list[float]]:
        return argmax_decode(probabilities)  # any tag set: no grammar between tags

    example_counts, score_of_counts = Task.example_counts, Task.score_of_counts  # accuracy, not entities


class CharTaggingTask(Task):
    name, unit, main_score = "char-tagging", "char", "char_accuracy"
    sides = ("char",)
    description = "a label per character (intra-word code-switching); character accuracy, all and MIXED words"
    example_kind = "entangle.data.intraword.CharTaggedSentence"

    def gold(self, example) -> list[str]:
        return [label for word_labels in example.char_tags for label in word_labels]

    def score(self, examples: list, predicted: list[list[str]]) -> dict:
        return char_accuracy([e.char_tags for e in examples], [split_by_words(e.words, p) for e, p in zip(examples, predicted)],
                             [e.mixed for e in examples])


class ClassificationTask(Task):
    name, unit, main_score = "classification", "text", "macro_f1"
    # A label per text from one pooled position: at tagging's 5e-4 the default model's training
    # collapsed to one class on TweetEval irony at one seed of three and partly at another; at 1e-4
    # every seed trained (benchmarks/RESULTS.md, "Irony, converged").
    new_lr = 1e-4
    description = "one label per text; accuracy, macro-F1 (the TweetEval convention) and a per-class report"
    example_kind = "entangle.data.classification.LabelledText with a label"

    def gold(self, example) -> list[str]:
        return [example.label]

    def score(self, examples: list, predicted: list[list[str]]) -> dict:
        return classification_scores([e.label for e in examples], [p[0] for p in predicted])

    def example_counts(self, gold: list[list[str]], predicted: list[list[str]]) -> list:
        return class_counts([g[0] for g in gold], [p[0] for p in predicted])

    def score_of_counts(self, counts: list) -> float:
        return macro_f1_of_counts(counts)


TASKS: dict[str, Task] = {task.name: task for task in (NerTask(), TaggingTask(), CharTaggingTask(), ClassificationTask())}


def get_task(name: str) -> Task:
    if name not in TASKS:
        raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}")
    return TASKS[name]


def split_by_words(words: list[str], per_char: list) -> list[list]:
    """Per-character values of a text (every word's characters in order) -> one list per word."""
    out, position = [], 0
    for word in words:
        out.append(per_char[position : position + len(word)])
        position += len(word)
    return out
