"""One contract for every task x model kind (co-attention at m = 0 and 1, CharBERT-style): the
heads' shapes, a finite loss, train -> save -> load -> the same predictions, and the ONNX export's
parity for every head family with the co-attention's options (an export takes 10-30 s of torch's
tracing, so none is repeated: m = 0, each side alone and the plain co-attention export in
test_onnx.py, and each task's head here with the kinds in EXPORTED; tagging's graph is NER's with
other labels). A new task or model kind joins the grid here."""

import pytest
import torch

from entangle.data.classification import LabelledText
from entangle.data.conll import Sentence
from entangle.data.intraword import CharTaggedSentence
from entangle.predict import Tagger
from tiny import tiny_model

WORDS = [["Peter", "lives", "in", "New", "York"], ["lol", "sooo", "good"], ["Anna"]]
EXAMPLES = {
    "ner": ([Sentence(w, t) for w, t in zip(WORDS, [["B-PER", "O", "O", "B-LOC", "I-LOC"], ["O", "O", "O"], ["B-PER"]])],
            ["O", "B-LOC", "I-LOC", "B-PER", "I-PER"]),
    "tagging": ([Sentence(w, ["NOUN" if x[0].isupper() else "X" for x in w]) for w in WORDS], ["NOUN", "X"]),
    "classification": ([LabelledText(" ".join(w), w, label) for w, label in zip(WORDS, ["pos", "neg", "pos"])],
                       ["neg", "pos"]),
    "char-tagging": ([CharTaggedSentence(w, [["B" if c.isupper() else "A" for c in x] for x in w],
                                         [x[0].isupper() and not x.isupper() for x in w]) for w in WORDS], ["A", "B"]),
}
KINDS = {  # model kind -> options, per task unit (a character task is read from the character side only)
    "co-attention m=0": lambda unit: dict(m=0, side="char" if unit == "char" else "subword"),
    "co-attention m=1": lambda unit: dict(m=1, side="char" if unit == "char" else "both"),
    # The default's alignment bias between shortened positions and subwords, and positional
    # alignment: each reads each subword's character span (one kind, to keep the suite's exports
    # few; test_downsampling.py and test_positional_alignment.py take each on its own).
    "co-attention m=1, characters shortened 2-fold, positional alignment, alignment bias": lambda unit: dict(
        m=1, side="char" if unit == "char" else "both", char_downsample=2, positional_alignment=True,
        alignment_bias=True),
    "CharBERT-style": lambda unit: None if unit == "char" else dict(m=0, side="subword", fusion="charbert"),
}
#: The kinds whose ONNX export is checked here (the plain co-attention's is test_onnx.py's, and each
#: task's head is exported with these).
EXPORTED = ("co-attention m=1, characters shortened 2-fold, positional alignment, alignment bias",)


def build(task: str, kind: str):
    examples, labels = EXAMPLES[task]
    tagger = Tagger(*tiny_model(task=task, labels=labels, **KINDS[kind]("text" if task == "classification" else
                                                                       "char" if task == "char-tagging" else "word")))
    return tagger, examples


def cases():
    for task in EXAMPLES:
        for kind in KINDS:
            unit = "text" if task == "classification" else "char" if task == "char-tagging" else "word"
            if KINDS[kind](unit) is not None:  # CharBERT-style has no character-level head: not a case
                yield task, kind


@pytest.mark.parametrize("task, kind", list(cases()))
def test_contract(task, kind, tmp_path):
    torch.manual_seed(0)
    tagger, examples = build(task, kind)
    label2id = tagger.model.config.label2id
    windows = tagger.featurizer.featurize([e.words for e in examples],
                                         [[label2id[x] for x in tagger.task.gold(e)] for e in examples])
    out = tagger.model.train()(**tagger.collator(windows))
    units = [tagger.task.units(e.words) for e in examples]
    for side in tagger.model.config.trained_sides:
        logits = getattr(out, f"{side}_logits")
        expected = (len(examples), len(label2id)) if task == "classification" else (len(examples), max(units), len(label2id))
        assert tuple(logits.shape) == expected, side
    assert torch.isfinite(out.loss)
    tagger.fit(examples, examples, output_dir=str(tmp_path / "run"), epochs=1, batch_size=2)
    before = tagger.probabilities([e.words for e in examples])
    loaded = Tagger.from_pretrained(tmp_path / "run" / "model")
    after = loaded.probabilities([e.words for e in examples])
    for side in before:
        for a, b, n in zip(before[side], after[side], units):
            assert a.shape[0] == n and torch.allclose(a, b, atol=1e-6), side
    if kind in EXPORTED and task != "tagging":
        pytest.importorskip("onnxruntime", reason="the onnx extra is not installed")
        from entangle.onnx_export import export_onnx

        exported = Tagger.from_pretrained(export_onnx(loaded, tmp_path / "onnx"))
        for side, probabilities in exported.probabilities([e.words for e in examples]).items():
            for a, b in zip(after[side], probabilities):
                assert torch.allclose(a, b, atol=1e-4), side
