"""Tasks beyond word tagging: text classification (readers, head, windows, metric) and
character-level tagging (positions, labels, every character predicted), end to end on tiny encoders."""

import hashlib
import json

import pytest
import torch
from conftest import shared_data
from sklearn.metrics import f1_score

from entangle.cli import main
from entangle.data.batching import inference_batches
from entangle.data.classification import LabelledText, read_table, read_tweeteval
from entangle.data.conll import DataFormatError, Sentence
from entangle.data.corpus import load_corpus
from entangle.data.features import IGNORE, Featurizer
from entangle.data.intraword import CharTaggedSentence
from entangle.metrics import classification_scores, token_accuracy
from entangle.modeling import EntangleConfig, EntangleForSequenceClassification
from entangle.predict import Tagger
from entangle.tasks import TASKS
from tiny import char_encoder, subword_encoder, tiny_model

CLASSES = ["neg", "pos"]
TEXTS = [LabelledText(t, t.split(), label, f"toy:{i}") for i, (t, label) in enumerate(
    [("so good", "pos"), ("very good day", "pos"), ("bad bad", "neg"), ("a bad day", "neg")] * 3)]
CHAR_LABELS = ["A", "B"]


def char_sentence(words: list[str]) -> CharTaggedSentence:
    """Lower-case letters are language A, upper-case B: a word like ``abCD`` switches inside."""
    tags = [["B" if c.isupper() else "A" for c in w] for w in words]
    return CharTaggedSentence(words, tags, [len(set(t)) > 1 for t in tags], "toy:1")


# ----------------------------------------------------------------------------- classification
@pytest.mark.parametrize(("m", "side"), [(0, "subword"), (0, "char"), (1, "both")])
def test_classifier_reads_the_first_position_through_dense_tanh_linear(m, side):
    model, tokenizer = tiny_model(m=m, side=side, labels=CLASSES, task="classification")
    assert isinstance(model, EntangleForSequenceClassification)
    head = next(iter(model.classifiers.values()))
    assert [type(layer).__name__ for layer in head] == ["Linear", "Tanh", "Dropout", "Linear"]
    tagger = Tagger(model, tokenizer)
    batch = tagger.collator(tagger.featurizer.featurize([["so", "good"], ["a", "bad", "day", "!"]], [[1], [0]]))
    assert "char_word_starts" not in batch and "subword_word_starts" not in batch
    out = model(**batch)
    for name in model.config.trained_sides:
        assert getattr(out, f"{name}_logits").shape == (2, len(CLASSES))
    assert out.loss.ndim == 0


def test_classifier_learns_and_round_trips(tmp_path):
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=1, labels=CLASSES, task="classification")
    tagger = Tagger(model, tokenizer)
    summary = tagger.fit(TEXTS, TEXTS, output_dir=str(tmp_path / "run"), epochs=15, batch_size=4, new_lr=3e-3,
                         lr=3e-3, patience=0)
    assert summary["best_dev"]["subword"]["macro_f1"] == 1.0
    results = tagger.classify(["so good", "a bad day"])
    assert [r.label for r in results] == ["pos", "neg"]
    assert all(abs(sum(r.distribution.values()) - 1) < 1e-5 for r in results)
    loaded = Tagger.from_pretrained(tmp_path / "run" / "model")
    assert isinstance(AutoModelForSequenceClassification.from_pretrained(tmp_path / "run" / "model"),
                      EntangleForSequenceClassification)
    batch = {k: v.to(loaded.model.device) for k, v in tagger.collator(tagger.featurizer.featurize([["so", "good"]])).items()}
    torch.testing.assert_close(loaded.model(**batch).logits, tagger.model.eval()(**batch).logits)


@pytest.mark.parametrize(("task", "labels", "examples", "new_lr"), [
    ("classification", CLASSES, TEXTS[:4], 1e-4),
    ("ner", ["O", "B-X"], [Sentence(["so", "good"], ["O", "B-X"])] * 4, 5e-4),
])
def test_the_library_trains_the_new_parts_at_the_rate_of_the_task(task, labels, examples, new_lr, tmp_path):
    """As ``entangle train`` resolves it: unless told, the new parts' rate is the task's, while the
    built-in character encoder keeps its own."""
    from entangle.options import BUILTIN_CHAR_LR

    tagger = Tagger(*tiny_model(m=1, labels=labels, task=task))
    tagger.fit(examples, None, output_dir=str(tmp_path), epochs=1, batch_size=4, patience=0)
    recorded = json.loads((tmp_path / "training_config.json").read_text())
    assert (recorded["new_lr"], recorded["char_lr"]) == (new_lr, BUILTIN_CHAR_LR)


def test_a_long_text_is_classified_from_all_its_windows():
    model, tokenizer = tiny_model(m=1, labels=CLASSES, task="classification", max_subwords=6, max_chars=24)
    tagger = Tagger(model, tokenizer)
    words = "a very good day and a very bad day again and again".split()
    windows = tagger.featurizer.featurize([words])
    assert len(windows) > 2
    rows = tagger._owned_rows(inference_batches(windows, tagger.batch_size, tagger.collator), ("subword",))
    expected = sum(w * r["subword"][0] for _, _, w, r in rows) / len(words)
    assert sum(w for _, _, w, _ in rows) == len(words)  # every word counted once
    torch.testing.assert_close(tagger.probabilities([words], ("subword",))["subword"][0][0], expected)


def test_classification_metrics_follow_scikit_learn():
    gold, predicted = ["a", "a", "b", "c", "c"], ["a", "b", "b", "c", "a"]
    scores = classification_scores(gold, predicted)
    assert scores["accuracy"] == 3 / 5
    assert scores["macro_f1"] == pytest.approx(f1_score(gold, predicted, average="macro"))
    assert scores["per_type"]["b"]["support"] == 1
    task = TASKS["classification"]
    counts = task.example_counts([[g] for g in gold], [[p] for p in predicted])
    assert task.score_of_counts(counts) == pytest.approx(scores["macro_f1"])


def test_token_accuracy_refuses_a_sentence_missing_from_the_predictions():
    """zip stopped at the shorter list: a sentence left out scored as if it was not in the test set."""
    with pytest.raises(ValueError):
        token_accuracy([["NOUN"], ["VERB"]], [["NOUN"]])
    assert token_accuracy([["NOUN", "DET"], ["VERB"]], [["NOUN", "NOUN"], ["VERB"]]) == 2 / 3


def test_tweeteval_layout(tmp_path):
    task = tmp_path / "stance" / "topic"
    task.mkdir(parents=True)
    (tmp_path / "stance" / "mapping.txt").write_text("0\tnone\n1\tagainst\n")  # stance keeps it one level up
    (task / "train_text.txt").write_text("I am for it \nno way \n")
    (task / "train_labels.txt").write_text("0\n1\n")
    texts = read_tweeteval(task / "train_text.txt")
    assert [(t.words, t.label) for t in texts] == [(["I", "am", "for", "it"], "none"), (["no", "way"], "against")]
    (task / "train_labels.txt").write_text("0\n7\n")
    with pytest.raises(DataFormatError, match=r"train_labels.txt:2: label '7' is not in"):
        read_tweeteval(task / "train_text.txt")
    (task / "train_labels.txt").write_text("0\n")
    with pytest.raises(DataFormatError, match=r"train_labels.txt:2: 1 labels for the 2 texts"):
        read_tweeteval(task / "train_text.txt")
    # Emoji's mapping goes on with a description: the class name is the column after the id, no tab in it.
    (tmp_path / "stance" / "mapping.txt").write_text("0\t❤\t_red_heart_\t\n1\t😂\t_face_with_tears_of_joy_\t\n")
    (task / "train_labels.txt").write_text("0\n1\n")
    assert [t.label for t in read_tweeteval(task / "train_text.txt")] == ["❤", "😂"]


def test_a_tsv_quoted_whole_by_a_csv_writer_has_its_header_unquoted_too(tmp_path):
    (tmp_path / "q.tsv").write_text('"text"\t"label"\n"he said ""hi"""\t"pos"\n')  # R's write.table, csv.QUOTE_ALL
    assert [(t.text, t.label) for t in read_table(tmp_path / "q.tsv")] == [('he said "hi"', "pos")]


@pytest.mark.parametrize(("name", "content", "error"), [
    ("a.tsv", "text\tlabel\nso good\tpos\n\t neg\n", r"a.tsv:3: empty text"),
    ("a.csv", "id,label\n1,pos\n", r"a.csv:1: the header has no column 'text'"),
    ("a.csv", "", r"a.csv:1: empty: no header line naming the columns \('text', 'label'\)"),  # said "(found: )"
    ("a.csv", 'text,label\n"so, good",pos\nbad\n', r"a.csv:3: 1 columns, the header has 2"),
    ("a.jsonl", '{"text": "so good", "label": "pos"}\n{"text": "bad"\n', r"a.jsonl:2: not valid JSON"),
    ("a.jsonl", '{"text": "so good"}\n', r"a.jsonl:1: expected an object with 'text' and 'label'"),
])
def test_table_errors_name_file_and_line(tmp_path, name, content, error):
    (tmp_path / name).write_text(content)
    with pytest.raises(DataFormatError, match=error):
        read_table(tmp_path / name)


def test_tables_read_quoted_fields_and_chosen_columns(tmp_path):
    (tmp_path / "a.csv").write_text('label,body\npos,"so, good"\nneg,bad day\n')
    texts = read_table(tmp_path / "a.csv", text_field="body")
    assert [(t.words, t.label, t.source.rsplit(":", 1)[1]) for t in texts] == [
        (["so", ",", "good"], "pos", "2"), (["bad", "day"], "neg", "3")]


def test_cli_classification_end_to_end(tmp_path, capsys):
    root = tmp_path / "enc"
    model, tokenizer = subword_encoder("bert")
    model.save_pretrained(root / "subword")
    tokenizer.save_pretrained(root / "subword")
    char_encoder().save_pretrained(root / "char")
    data = tmp_path / "data"
    data.mkdir()
    rows = [{"text": t.text, "label": t.label} for t in TEXTS]
    for split in ("train", "dev", "test"):
        (data / f"{split}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--char", str(root / "char"), "--subword", str(root / "subword"), "-m", "1",
          "--epochs", "1", "--batch-size", "4", "--output", str(out)])
    assert json.loads((out / "model" / "config.json").read_text())["task"] == "classification"
    main(["evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "test.json"),
          "--predictions", str(tmp_path / "pred.json")])
    results = json.loads((tmp_path / "test.json").read_text())["results"]
    assert set(results) == {"subword", "char", "joint"} and 0 <= results["joint"]["macro_f1"] <= 1
    saved = json.loads((tmp_path / "pred.json").read_text())
    assert saved["gold"][0] == ["pos"]
    assert saved["words_sha256"] == hashlib.sha256(json.dumps([t.words for t in TEXTS]).encode()).hexdigest()
    (tmp_path / "in.txt").write_text("so good\n\nbad day\n")
    main(["predict", str(out), "--input", str(tmp_path / "in.txt"), "--output-format", "jsonl",
          "--output", str(tmp_path / "out.jsonl")])
    lines = [json.loads(line) for line in (tmp_path / "out.jsonl").read_text().splitlines()]
    assert [r["text"] for r in lines] == ["so good", "", "bad day"]  # the empty line answered in place
    assert all(r["label"] in CLASSES and set(r["probabilities"]) == set(CLASSES) for r in lines if r["text"])
    assert lines[1] == {"text": "", "label": None, "probability": None, "probabilities": {}}
    # A table with its own column names, read by robustness too.
    (tmp_path / "fields").mkdir()
    (tmp_path / "fields" / "test.jsonl").write_text("".join(json.dumps({"body": r["text"], "tag": r["label"]}) + "\n"
                                                           for r in rows))
    main(["robustness", str(out), "--data", str(tmp_path / "fields"), "--text-field", "body", "--label-field", "tag",
          "--attacks", "upper", "--rates", "0,1", "--output", str(tmp_path / "report")])
    curves = json.loads((tmp_path / "report" / "noise_curves.json").read_text())
    assert {(r["side"], r["rate"]) for r in curves} == {(side, rate) for side in ("subword", "char", "joint") for rate in (0, 1)}


def test_a_named_tweeteval_set_leaves_out_its_published_empty_tweets_and_a_users_file_is_refused(tmp_path):
    """TweetEval's hate has 7 empty training tweets: --data tweeteval-hate stopped at the first."""
    hate = tmp_path / "tweeteval" / "hate"
    hate.mkdir(parents=True)
    (hate / "mapping.txt").write_text("0\tnot-hate\n1\thate\n")
    for split in ("train", "val", "test"):
        (hate / f"{split}_text.txt").write_text("I love it\n\nyou are awful\n" if split == "train" else "fine day\n")
        (hate / f"{split}_labels.txt").write_text("0\n1\n1\n" if split == "train" else "0\n")
    with pytest.warns(UserWarning, match=r"train_text.txt: 1 empty text\(s\) left out, as published \(line\(s\) 2\)"):
        corpus = load_corpus("tweeteval-hate", data_dir=tmp_path)
    assert [e.words for e in corpus.train] == [["I", "love", "it"], ["you", "are", "awful"]]
    with pytest.raises(DataFormatError, match=r"train_text.txt:2: empty text \(no words to classify\)"):
        load_corpus(hate)  # a directory of the user's own: each bad line is an error


def test_tweeteval_emotion_reads_as_a_classification_corpus():
    data_dir = shared_data("tweeteval", "emotion").parents[1]
    corpus = load_corpus("tweeteval-emotion", data_dir=data_dir)
    assert corpus.task == "classification"
    assert (len(corpus.train), len(corpus.dev), len(corpus.test)) == (3257, 374, 1421)
    assert corpus.labels == ["anger", "joy", "optimism", "sadness"]


# ---------------------------------------------------------------------------- character tagging
def test_character_units_cover_every_character_even_of_clipped_words():
    featurizer = Featurizer(None, max_chars=8, max_subwords=None, unit="char")
    words = ["ab", "CDe", "fghijklmnop"]  # the last word is longer than a window: clipped to 6
    labels = [1 if c.isupper() else 0 for w in words for c in w]
    windows = featurizer.featurize([words], [labels])
    owned = sorted(u for w in windows for u in range(*w.own_units))
    assert owned == list(range(sum(map(len, words))))  # each character owned once
    last = windows[-1]
    assert last.start == 2 and len(last.char_word_starts) == 11
    assert last.char_word_starts[5:] == [6] * 6  # clipped characters read at the last kept one
    assert last.labels[:6] == [0] * 6 and last.labels[6:] == [IGNORE] * 5


def test_character_task_is_predicted_from_the_character_side_only():
    with pytest.raises(ValueError, match="char-tagging task is predicted from the char side only"):
        tiny_model(m=1, side="both", labels=CHAR_LABELS, task="char-tagging")


@pytest.mark.parametrize("m", [0, 1])
def test_character_tagger_learns_a_switch_inside_a_word(tmp_path, m):
    torch.manual_seed(0)
    model, tokenizer = tiny_model(m=m, side="char", labels=CHAR_LABELS, task="char-tagging", max_chars=12)
    tagger = Tagger(model, tokenizer)
    sentences = [char_sentence(s.split()) for s in ("abCD ef", "GH ijKL", "mnOP qr st")] * 4
    summary = tagger.fit(sentences, sentences, output_dir=str(tmp_path / "run"), epochs=25, batch_size=4,
                         new_lr=1e-2, lr=1e-2, patience=0)
    assert summary["best_dev"]["char"]["char_accuracy"] > 0.9
    tagged = tagger.tag_chars([["abCD", "xyZ"], ["uvwxyzABCDEFGH"]])  # the second is longer than a window
    assert [len(w) for s in tagged for w in s.labels] == [4, 3, 14]
    metrics = tagger.evaluate(sentences[:3])["char"]
    assert metrics["mixed_words"] == 3 and 0 <= metrics["mixed_char_accuracy"] <= 1
    with pytest.raises(ValueError, match="use Tagger.tag_chars"):
        tagger.tag([["abCD"]])


def test_cli_character_tagging_on_sagt_style_conllu(tmp_path):
    sagt = ("# sent_id = s1\n"
            "1\tPrüfungum\tPrüfung\tNOUN\t_\t_\t0\troot\t_\tCSID=MIXED|CSPoint=Prüfung§um\n"
            "2\tgut\tgut\tADJ\t_\t_\t1\tdep\t_\tCSID=DE\n"
            "3\tdeğil\tdeğil\tAUX\t_\t_\t1\tcop\t_\tCSID=TR\n\n")
    data = tmp_path / "data"
    data.mkdir()
    for split in ("train", "dev", "test"):
        (data / f"x-ud-{split}.conllu").write_text(sagt * 3)
    root = tmp_path / "enc"
    char_encoder().save_pretrained(root / "char")
    out = tmp_path / "run"
    main(["train", "--data", str(data), "--task", "char-tagging", "--char", str(root / "char"), "-m", "0",
          "--side", "char", "--epochs", "1", "--output", str(out)])
    assert EntangleConfig.from_pretrained(out / "model").task == "char-tagging"
    main(["evaluate", str(out), "--data", str(data), "--output", str(tmp_path / "test.json")])
    assert "mixed_char_accuracy" in json.loads((tmp_path / "test.json").read_text())["results"]["char"]
    (tmp_path / "in.txt").write_text("Prüfungum gut\n")
    main(["predict", str(out), "--input", str(tmp_path / "in.txt"), "--output", str(tmp_path / "out.tsv")])
    first = (tmp_path / "out.tsv").read_text().splitlines()[0].split("\t")
    assert first[0] == "Prüfungum" and "".join(seg.rsplit(":", 1)[0] for seg in first[1].split("|")) == "Prüfungum"
