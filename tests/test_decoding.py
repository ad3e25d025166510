"""Constrained IOB2 decoding: valid sequences only, and the most probable of them."""

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from entangle.decoding import allowed_transitions, argmax_decode, iob2_viterbi
from entangle.tasks import get_task

LABELS = ["B-LOC", "B-PER", "I-LOC", "I-PER", "O"]


def valid(tags: list[str]) -> bool:
    previous = "O"
    for tag in tags:
        if tag.startswith("I-") and previous[2:] != tag[2:]:
            return False
        previous = tag
    return True


def test_transitions_follow_iob2():
    allowed = allowed_transitions(LABELS)
    start = dict(zip(LABELS, allowed[-1]))
    assert not start["I-LOC"] and not start["I-PER"] and start["B-LOC"] and start["O"]
    after = {previous: dict(zip(LABELS, row)) for previous, row in zip(LABELS, allowed[:-1])}
    assert after["B-LOC"]["I-LOC"] and after["I-LOC"]["I-LOC"] and not after["B-PER"]["I-LOC"]
    assert not after["O"]["I-PER"] and all(after[p]["O"] and after[p]["B-PER"] for p in LABELS)


def test_a_dangling_inside_tag_is_repaired_by_probability():
    # argmax: O I-LOC I-LOC (invalid); the best valid sequence starts the entity with B-LOC
    p = np.array([[0.1, 0.0, 0.1, 0.0, 0.8], [0.3, 0.0, 0.6, 0.0, 0.1], [0.1, 0.0, 0.8, 0.0, 0.1]])
    assert [LABELS[i] for i in argmax_decode(p)[0]] == ["O", "I-LOC", "I-LOC"]
    path, chosen = iob2_viterbi(p, LABELS)
    assert [LABELS[i] for i in path] == ["O", "B-LOC", "I-LOC"] and chosen == pytest.approx([0.8, 0.3, 0.8])


@settings(max_examples=200, deadline=None)
@given(arrays(np.float64, st.tuples(st.integers(0, 5), st.just(len(LABELS))), elements=st.floats(0.001, 1.0)))
def test_viterbi_finds_the_most_probable_valid_sequence(scores):
    p = scores / scores.sum(-1, keepdims=True) if len(scores) else scores
    path, _ = iob2_viterbi(p, LABELS)
    assert valid([LABELS[i] for i in path]) and len(path) == len(p)
    best = max((seq for seq in itertools.product(range(len(LABELS)), repeat=len(p)) if valid([LABELS[i] for i in seq])),
               key=lambda seq: sum(math.log(p[t, i]) for t, i in enumerate(seq)))
    assert sum(math.log(p[t, i]) for t, i in enumerate(path)) == pytest.approx(sum(math.log(p[t, i]) for t, i in enumerate(best)))


def test_tasks_decode_by_their_grammar():
    p = np.array([[0.1, 0.0, 0.6, 0.0, 0.3]])
    assert get_task("ner").decode(p, LABELS)[0] == ["O"]  # I-LOC cannot start a sentence
    assert get_task("ner").decode(p, LABELS, "argmax")[0] == ["I-LOC"]
    assert get_task("tagging").decode(p, LABELS)[0] == ["I-LOC"]  # a POS tag set has no grammar
    with pytest.raises(ValueError, match="decoding must be one of constrained, argmax"):
        get_task("ner").decode(p, LABELS, "beam")
