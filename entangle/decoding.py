"""From per-unit label probabilities to labels: the most probable label of each unit, or, for
IOB2 tags, the most probable *valid* sequence.

A tagger that picks each word's label on its own can output ``I-X`` after ``O`` or after
another type (``B-PER I-LOC``), which no entity span explains; seqeval's strict mode then drops
those words from every entity. Constrained Viterbi decoding maximises the sum of the words' log
probabilities over the sequences IOB2 allows, so every ``I-X`` continues a ``B-X`` or ``I-X``.
"""

from __future__ import annotations

import numpy as np

DECODINGS = ("constrained", "argmax")


def argmax_decode(probabilities) -> tuple[list[int], list[float]]:
    """Each row's most probable label and its probability (``probabilities``: ``(n_units, n_labels)``,
    a CPU tensor or an array)."""
    rows = np.asarray(probabilities)
    index = rows.argmax(-1)
    return index.tolist(), rows[np.arange(len(rows)), index].tolist()


def allowed_transitions(labels: list[str]) -> np.ndarray:
    """``(n_labels + 1, n_labels)`` booleans: row ``i`` says which labels may follow label ``i``;
    the last row is the sentence start. ``I-X`` may only follow ``B-X`` or ``I-X``."""
    allowed = np.ones((len(labels) + 1, len(labels)), dtype=bool)
    for j, label in enumerate(labels):
        if label.startswith("I-"):
            allowed[:, j] = [previous in (f"B-{label[2:]}", label) for previous in labels] + [False]
    return allowed


def iob2_viterbi(probabilities, labels: list[str]) -> tuple[list[int], list[float]]:
    """The most probable label sequence that is valid IOB2, and each chosen label's probability.

    ``probabilities`` is ``(n_words, n_labels)``; a sentence without words gives empty lists.
    """
    rows = np.asarray(probabilities, dtype=np.float64)
    if len(rows) == 0:
        return [], []
    transition = np.where(allowed_transitions(labels), 0.0, -np.inf)
    emission = np.log(np.clip(rows, 1e-12, None))  # (n_words, n_labels)
    score = transition[-1] + emission[0]  # (n_labels,)
    back = []
    for t in range(1, len(rows)):
        candidates = score[:, None] + transition[:-1]  # (previous, next)
        previous = candidates.argmax(0)
        score = candidates[previous, np.arange(len(labels))] + emission[t]
        back.append(previous)
    path = [int(score.argmax())]
    for previous in reversed(back):
        path.append(int(previous[path[-1]]))
    path.reverse()
    return path, rows[np.arange(len(rows)), path].astype(float).tolist()
