"""Evaluation of a tagger on labelled sentences, each trained side scored separately."""

from __future__ import annotations

from .data.conll import Sentence
from .data.labels import check_labels
from .metrics import score
from .predict import Tagger


def evaluate(tagger: Tagger, sentences: list[Sentence], what: str = "evaluation data") -> dict[str, dict]:
    """``{side: metrics}`` for every side the model was trained on (one forward pass serves both)."""
    config = tagger.model.config
    check_labels(sentences, tagger.labels, what)
    gold = [sentence.tags for sentence in sentences]
    probabilities = tagger.probabilities([sentence.words for sentence in sentences])
    return {
        side: score(config.task, gold, [[config.id2label[i] for i in p.argmax(-1).tolist()] for p in per_sentence])
        for side, per_sentence in probabilities.items()
    }
